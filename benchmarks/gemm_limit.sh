#!/usr/bin/env bash
# Benchmark: how close a training step comes to the GEMM-bound limit on this machine
# (docs/speed.md). conflux-bench gemm-limit records every SGEMM call of one step of the config's
# model in its im2col formulation, times OpenBLAS on each shape alone, and in alternating rounds
# times the real step (1 trainer, a synthetic batch in memory, cluster.blas_threads threads),
# then breaks the step down by layer and phase. It runs once per conv kernel family
# (train.conv_kernels: im2col, then onednn), one after the other in this script, and prints both
# fractions. Results: bench-results/gemm_limit-<kernels>.{txt,json}.
# GEMM_LIMIT_CONFIG picks the config (default configs/cifar10_cnn.toml); GEMM_LIMIT_ARGS adds
# conflux-bench options (e.g. "--rounds 5 --steps 3").
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
BENCH=${CONFLUX_BIN:-build/bin}/conflux-bench
OUT=bench-results
mkdir -p "$OUT"
config=${GEMM_LIMIT_CONFIG:-configs/cifar10_cnn.toml}
for kernels in im2col onednn; do
  # shellcheck disable=SC2086 # GEMM_LIMIT_ARGS holds several options
  "$BENCH" gemm-limit --config "$config" --set "data.dir=$CONFLUX_DATA" \
    --set cluster.trainers=1 --set "train.conv_kernels=$kernels" ${GEMM_LIMIT_ARGS:-} \
    --json "$OUT/gemm_limit-$kernels.json" | tee "$OUT/gemm_limit-$kernels.txt"
done
echo "== $config: fraction of the GEMM-limit (median of rounds)"
for kernels in im2col onednn; do
  printf '%-7s %s\n' "$kernels" "$(grep -o 'fraction [0-9.]* \[[^]]*\]' "$OUT/gemm_limit-$kernels.txt" | head -1)"
done
