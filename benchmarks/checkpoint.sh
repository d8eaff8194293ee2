#!/usr/bin/env bash
# Benchmark: what checkpointing every 100 steps costs, for the MNIST and the CIFAR-10 model.
# conflux-bench checkpoint trains the same config with and without checkpoints, alternating in
# one process (2 trainer ranks), and reports the slowdown (target <= 2 %), the stall per
# checkpoint and the background persist throughput. This script then times `dd ... conv=fsync`
# writing a file of the checkpoint's size into the same directory and prints the ratio
# (target >= 70 %). Results: bench-results/checkpoint.txt, bench-results/checkpoint-CONFIG.json
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/mpi-env.sh
source tools/mpi-env.sh
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
BENCH=${CONFLUX_BIN:-build/bin}/conflux-bench
OUT=bench-results
DIR=${CHECKPOINT_BENCH_DIR:-$OUT/checkpoint-run}
mkdir -p "$OUT" "$DIR"
: >"$OUT/checkpoint.txt"

# Median MiB/s of 5 `dd bs=1M conv=fsync` writes of SIZE_MIB MiB (the checkpoint's size, to
# the byte: the last block is short, as the checkpoint's tail is) into $DIR.
dd_mib_s() {
  local bytes rates=() i secs
  bytes=$(awk -v m="$1" 'BEGIN { printf "%d", m * 1048576 }')
  for i in 1 2 3 4 5; do
    secs=$(dd if=/dev/zero of="$DIR/dd-test.$i" bs=1M count="$bytes" iflag=count_bytes \
      conv=fsync 2>&1 | sed -n 's/.*copied, \([0-9.e+-]*\) s.*/\1/p')
    rates+=("$(awk -v b="$bytes" -v s="$secs" 'BEGIN { print b / 1048576 / s }')")
    rm -f "$DIR/dd-test.$i"
  done
  printf '%s\n' "${rates[@]}" | sort -g | sed -n 3p
}

bench() {  # NAME CONFIG ROUNDS [--set ...]
  local name=$1 config=$2 rounds=$3
  shift 3
  echo "== $name" | tee -a "$OUT/checkpoint.txt"
  local out
  out=$("${MPIRUN[@]}" -np 2 "$BENCH" checkpoint --config "$config" --every 100 --rounds "$rounds" \
    --dir "$DIR" --json "$OUT/checkpoint-$(basename "$config" .toml).json" "$@" 2>&1 |
    tee -a "$OUT/checkpoint.txt")
  local file persist dd
  file=$(sed -n 's/^RESULT.* file_mib=\([0-9.]*\).*/\1/p' <<<"$out")
  persist=$(sed -n 's/^RESULT.* idle_persist_mib_s=\([0-9.]*\).*/\1/p' <<<"$out")
  dd=$(dd_mib_s "$file")
  printf '  dd bs=1M conv=fsync, %s MiB (same size)   %.1f MiB/s (median of 5)\n  persist idle / dd        %.0f %%\n' \
    "$file" "$dd" "$(awk -v p="$persist" -v d="$dd" 'BEGIN { print 100 * p / d }')" |
    tee -a "$OUT/checkpoint.txt"
  rm -rf "$DIR/checkpoints"
}

bench "MNIST MLP (535,818 parameters), 2 epochs" configs/mnist_mlp.toml 3 --set train.epochs=2
bench "CIFAR-10 CNN, 300 steps" configs/cifar10_cnn.toml 2 --set train.epochs=1 \
  --set data.train_limit=38400 --set train.batch_size=128
