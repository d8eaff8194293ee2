#!/usr/bin/env bash
# Benchmark: the data service on this machine. Prints the cost per sample of every transform,
# then runs 1 trainer + 1 worker rank (conflux-bench data-service): an offload-ratio sweep
# with a SIMULATED GPU step (a sleep) and the heavy CIFAR-10 pipeline at 96x96, and the data
# plane's goodput against plain MPI send/recv measured in the same run.
# Targets: best ratio >= 1.8x the samples/s of ratio 0; goodput >= 70 % of plain MPI.
# Results: bench-results/transforms.{txt,json,png}, bench-results/data_service.{txt,json,png}
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
DATA=$CONFLUX_DATA
BENCH=${CONFLUX_BIN:-build/bin}/conflux-bench
OUT=bench-results
mkdir -p "$OUT"
"$BENCH" transforms --data-dir "$DATA" --json "$OUT/transforms.json" --plot "$OUT/transforms.png" |
  tee "$OUT/transforms.txt"
echo
"${MPIRUN[@]}" -np 2 "$BENCH" data-service --data-dir "$DATA" --resolution 96 \
  --ratios 0,0.45,0.5,0.55,0.6,1 --steps 60 --rounds 5 --json "$OUT/data_service.json" \
  --plot "$OUT/data_service.png" "$@" | tee "$OUT/data_service.txt"
