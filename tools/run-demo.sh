#!/usr/bin/env bash
# `make demo`: trains configs/mnist_mlp.toml on 2 trainer ranks under mpirun and says where
# the results are.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
run_dir="runs/mnist_mlp-demo-$(date +%Y%m%d-%H%M%S)"
# Portable kernels, so that the digest is the README's on any x86-64 CPU with AVX2 (docs/design.md
# invariant 8); a user's own OPENBLAS_CORETYPE still wins.
export CONFLUX_BLAS_PIN=${CONFLUX_BLAS_PIN:-portable}
echo "demo: $MPI_LAUNCHER -np 2 ${CONFLUX_BIN:-build/bin}/conflux train --config configs/mnist_mlp.toml --set run.dir=$run_dir"
"${MPIRUN[@]}" -np 2 "${CONFLUX_BIN:-build/bin}/conflux" train --config configs/mnist_mlp.toml \
  --set "run.dir=$run_dir"
echo
echo "demo: results in $run_dir/"
echo "  config.toml    the fully resolved config"
echo "  metrics.jsonl  loss, accuracy, samples/s and time per epoch"
echo "  model.h5       the trained weights (h5dump -H $run_dir/model.h5)"
echo "  summary.json   final accuracy and the weight digest"
