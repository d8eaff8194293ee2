#!/usr/bin/env bash
# Benchmark: how close a training step comes to the GEMM-bound limit on this machine
# (docs/speed.md). conflux-bench gemm-limit records every SGEMM call of one step of the config's
# model, times OpenBLAS on each shape alone, and in alternating rounds times the real step
# (1 trainer, a synthetic batch in memory, cluster.blas_threads BLAS threads), then breaks the
# step down by layer and phase. Results: bench-results/gemm_limit.{txt,json}.
# GEMM_LIMIT_CONFIG picks the config (default configs/cifar10_cnn.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
BENCH=${CONFLUX_BIN:-build/bin}/conflux-bench
OUT=bench-results
mkdir -p "$OUT"
"$BENCH" gemm-limit --config "${GEMM_LIMIT_CONFIG:-configs/cifar10_cnn.toml}" \
  --set "data.dir=$CONFLUX_DATA" --json "$OUT/gemm_limit.json" | tee "$OUT/gemm_limit.txt"
