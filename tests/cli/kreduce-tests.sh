#!/usr/bin/env bash
# K-Reduce (comm.strategy = "kreduce") from the command line: with equal batches and K = W = 2
# it trains to the allreduce digest, bit for bit; K = 1 of 2 with a larger non-aggregator batch
# and stale non-aggregators reaches the MNIST accuracy target (0.97, as the SLURM tests ask);
# unequal batches built by workers give the digest of local builds and use every sample once
# (audited); a non-aggregator batch that starves the aggregators is an input error. About 25 s
# on 2 cores.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
if [ ! -d "$DATA/mnist" ]; then
  ok "k-reduce tests (skipped: $DATA/mnist not found)"
  cli_summary
  exit
fi
KREDUCE=(--set 'comm.strategy="kreduce"')
STALE=("${KREDUCE[@]}" --set comm.aggregators=1 --set comm.nonaggregator_batch_size=80
  --set comm.stale_nonaggregators=true)
mnist_train() { "${MPIRUN[@]}" -np "$1" "$CONFLUX" train --config configs/mnist_mlp.toml \
  --set "run.dir=$TMP/run-$2" "${@:3}"; }
json_field() { grep -oP "\"$2\": *\"?\K[^\",}]+" "$1" 2>/dev/null; }

# --- (a) K = W = 2, equal batches: the allreduce weights ----------------------------------------
mnist_train 2 allreduce "${QUICK[@]}" >"$TMP/allreduce.log" 2>&1
mnist_train 2 kreduce "${QUICK[@]}" "${KREDUCE[@]}" >"$TMP/kreduce.log" 2>&1
da=$(digest_of "$TMP/allreduce.log")
dk=$(digest_of "$TMP/kreduce.log")
if [ -n "$da" ] && [ "$da" = "$dk" ] && grep -q "gradient sync: k-reduce (K=2 of 2)" "$TMP/kreduce.log"; then
  ok "k-reduce K = W = 2 trains to the allreduce digest ($dk)"
else
  not_ok "k-reduce digest '$dk' != allreduce '$da'" "$(cat "$TMP/kreduce.log")"
fi

# --- (b) K = 1 of 2, 48 + 80 samples per step, stale non-aggregator: accuracy target -------------
mnist_train 2 stale --set train.epochs=3 --set train.log_every=0 "${STALE[@]}" >"$TMP/stale.log" 2>&1
acc=$(json_field "$TMP/run-stale/summary.json" final_test_accuracy)
if grep -q "k-reduce (K=1 of 2, stale non-aggregators).*48 per aggregator, 80 per non-aggregator" "$TMP/stale.log" &&
  awk -v a="${acc:-0}" 'BEGIN { exit !(a >= 0.97) }'; then
  ok "k-reduce K = 1 of 2, unequal batches, stale non-aggregator: test accuracy $acc >= 0.97"
else
  not_ok "stale k-reduce: test accuracy '$acc' (want >= 0.97)" "$(cat "$TMP/stale.log")"
fi

# --- (c) unequal batches from the data service: same weights, every sample once -----------------
mnist_train 2 local "${QUICK[@]}" "${STALE[@]}" >"$TMP/local.log" 2>&1
mnist_train 4 service "${QUICK[@]}" "${STALE[@]}" --set data.offload_ratio=1 --set data.audit=true >"$TMP/service.log" 2>&1
dl=$(digest_of "$TMP/local.log")
ds=$(digest_of "$TMP/service.log")
if [ -n "$dl" ] && [ "$dl" = "$ds" ] && [ "$(grep -c "audit: all 1000 samples used exactly once" "$TMP/service.log")" -eq 5 ] &&
  grep -q "0 built by trainers, 16 by workers" "$TMP/service.log"; then
  ok "unequal batches built by 2 workers: the digest of local builds, every sample once per epoch"
else
  not_ok "unequal batches from workers: digest '$ds' (local '$dl')" "$(cat "$TMP/service.log")"
fi

# --- (d) bad unequal batches ------------------------------------------------------------------------
expect_fail "non-aggregator batch that leaves the aggregator no sample: error on every rank" 2 \
  "comm.nonaggregator_batch_size = 128 for 1 non-aggregator(s) leaves 0 of train.batch_size = 128" 2 -- \
  mnist_train 2 starve "${QUICK[@]}" "${KREDUCE[@]}" --set comm.aggregators=1 --set comm.nonaggregator_batch_size=128

cli_summary
