# shellcheck shell=bash
# Shared by the planner benchmarks (plan_accuracy.sh, plan_threads.sh, plan_input_bound.sh):
# their set-up and the held-out measurement that compares `conflux predict` with real epochs.
# Source it from the repository root after `set -euo pipefail`.

# MPI and data environment, BIN, OUT (bench-results), a WORK directory removed on exit, and
# REPORT = $OUT/$1.txt, emptied.
plan_bench_setup() {
  # shellcheck source=tools/mpi-env.sh
  source tools/mpi-env.sh
  # shellcheck source=tools/data-env.sh
  source tools/data-env.sh
  BIN=${CONFLUX_BIN:-build/bin}
  OUT=bench-results
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  mkdir -p "$OUT"
  REPORT=$OUT/$1.txt
  : >"$REPORT"
}

# heldout_epochs CONFIG MODEL RANKS --set ...: `conflux predict`'s epoch for the configuration the
# --set arguments give, then that epoch trained three times on RANKS ranks (evaluation,
# checkpoints and the timeline off: the model predicts training iterations only). Prints
# "predicted median run1 run2 run3" in seconds.
heldout_epochs() {
  local config=$1 model=$2 ranks=$3
  shift 3
  local predicted dir measured=()
  predicted=$("$BIN/conflux" predict --model "$model" --config "$config" "$@" |
    sed -n 's/^predicted epoch: \([0-9.]*\) s.*/\1/p')
  for _ in 1 2 3; do
    dir=$(mktemp -d -p "$WORK" run-XXXX)
    "${MPIRUN[@]}" -np "$ranks" "$BIN/conflux" train --config "$config" "$@" \
      --set train.eval=false --set checkpoint.final=false --set profile.timeline=false \
      --set run.dir=\""$dir/run"\" >"$dir.log" 2>&1 || {
      cat "$dir.log" >&2
      exit 3
    }
    measured+=("$(sed -n 's/.*"epoch_seconds": \([0-9.e+-]*\),.*/\1/p' "$dir/run/metrics.jsonl")")
  done
  echo "$predicted $(printf '%s\n' "${measured[@]}" | sort -g | sed -n 2p) ${measured[*]}"
}

# heldout_report TITLE ROW...: the table of rows "W M B samples predicted median run1 run2 run3"
# and their median absolute error, on stdout and appended to REPORT.
heldout_report() {
  local title=$1 r w m b n p med r1 r2 r3 errors count
  shift
  {
    echo
    echo "== $title: predicted vs measured epoch (median of 3)"
    printf '%3s %7s %6s %8s %11s %11s %8s   %s\n' W "M MB" "B" samples "predicted s" \
      "measured s" "error %" "runs (s)"
    for r in "$@"; do
      read -r w m b n p med r1 r2 r3 <<<"$r"
      awk -v w="$w" -v m="$m" -v b="$b" -v n="$n" -v p="$p" -v med="$med" -v runs="$r1 $r2 $r3" \
        'BEGIN { printf "%3d %7d %6d %8d %11.3f %11.3f %+8.1f   %s\n", w, m, b, n, p, med, 100 * (p - med) / med, runs }'
    done
    errors=$(for r in "$@"; do
      read -r _ _ _ _ p med _ <<<"$r"
      awk -v p="$p" -v med="$med" 'BEGIN { e = (p - med) / med; if (e < 0) e = -e; print 100 * e }'
    done | sort -g)
    count=$(wc -l <<<"$errors")
    echo "median absolute error over $count held-out configurations: $(awk -v c="$count" \
      '{ v[NR] = $1 } END { if (c % 2) print v[(c + 1) / 2]; else print (v[c / 2] + v[c / 2 + 1]) / 2 }' \
      <<<"$errors") % (target <= 10 %)"
  } | tee -a "$REPORT"
}
