#!/usr/bin/env bash
# Command-line tests of the test-image data: `conflux-bench make-images` writes the same bytes
# twice for the same options (and other bytes for another seed), the ImageNet-style layout
# with its PNG and damaged files, refuses a non-empty --out, and `conflux-bench decode` runs on
# what it wrote, skipping the damaged files.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
BENCH=${CONFLUX_BIN:-build/bin}/conflux-bench

if [ ! -d "$DATA/cifar-10" ]; then
  echo "skip - image data CLI tests: CIFAR-10 not found under $DATA"
  cli_summary
  exit
fi

ARGS=(--train 60 --val 20 --size 40-90 --png-every 7 --gray-every 5 --damaged)
out_a=$("$BENCH" make-images --data-dir "$DATA" --out "$TMP/a" "${ARGS[@]}" 2>&1)
rc_a=$?
# --data: the option's short spelling (an unambiguous prefix of --data-dir).
out_b=$("$BENCH" make-images --data "$DATA" --out "$TMP/b" "${ARGS[@]}" 2>&1)
rc_b=$?
if [ "$rc_a" -eq 0 ] && [ "$rc_b" -eq 0 ] && diff -r "$TMP/a" "$TMP/b" >/dev/null; then
  ok "make-images twice with the same options: identical files"
else
  not_ok "make-images twice: exit $rc_a/$rc_b, or the trees differ" "$out_a
$out_b
$(diff -rq "$TMP/a" "$TMP/b" 2>&1)"
fi

"$BENCH" make-images --data-dir "$DATA" --out "$TMP/c" "${ARGS[@]}" --seed 2 >/dev/null 2>&1
if ! diff -rq "$TMP/a" "$TMP/c" >/dev/null 2>&1; then
  ok "another --seed draws other sizes (other bytes)"
else
  not_ok "--seed 2 wrote the same files as --seed 1"
fi

if grep -q "a stand-in for ImageNet" <<<"$out_a"; then
  ok "the output says what the data is (CIFAR-10 upscaled, a stand-in for ImageNet)"
else
  not_ok "no honest name of the data in the output" "$out_a"
fi

classes=$(find "$TMP/a/train" "$TMP/a/val" -mindepth 1 -maxdepth 1 -type d | wc -l)
pngs=$(find "$TMP/a" -name '*.png' | wc -l)         # every 7th: 8 of 60 train, 2 of 20 val
jpgs=$(find "$TMP/a" -name '*.jpg' | wc -l)         # the other 70 + 3 damaged
badnames=$(find "$TMP/a" -type f | grep -cvE '/(train|val)/[a-z]+/[0-9]{6}\.(jpg|png)$')
if [ "$classes" -eq 20 ] && [ "$pngs" -eq 10 ] && [ "$jpgs" -eq 73 ] && [ "$badnames" -eq 0 ]; then
  ok "layout: 10 class folders per split, <class>/<index>.jpg|png, 10 PNG + 73 JPEG files"
else
  not_ok "layout: $classes class folders, $pngs PNG, $jpgs JPEG, $badnames odd names" \
    "$(find "$TMP/a" -type f | head -20)"
fi

mapfile -t damaged < <(sed -n 's/^damaged: //p' <<<"$out_a")
damaged_ok=0
if [ "${#damaged[@]}" -eq 3 ] && [ -f "${damaged[0]}" ] && [ -f "${damaged[1]}" ] && [ -f "${damaged[2]}" ]; then
  # truncated JPEG (JPEG magic, but shorter than a whole file), text, zero bytes
  [ "$(head -c 3 "${damaged[0]}" | od -An -tx1 | tr -d ' ')" = ffd8ff ] &&
    head -c 4 "${damaged[1]}" | grep -q '^This' && [ ! -s "${damaged[2]}" ] && damaged_ok=1
fi
if [ "$damaged_ok" -eq 1 ]; then
  ok "--damaged wrote a truncated JPEG, a text file and a zero-byte file, and printed them"
else
  not_ok "--damaged files: ${damaged[*]:-none printed}" "$out_a"
fi

expect_fail "make-images refuses a non-empty --out" 2 "not an empty directory" -- \
  "$BENCH" make-images --data-dir "$DATA" --out "$TMP/a" --train 1 --val 0
expect_fail "make-images rejects a malformed --size" 2 "--size" -- \
  "$BENCH" make-images --data-dir "$DATA" --out "$TMP/d" --size 500-200

out=$("$BENCH" decode --images "$TMP/a" --repetitions 1 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && grep -q "3 skipped" <<<"$out" && grep -q "conflux / baseline" <<<"$out"; then
  ok "decode benchmark on the folder: runs, skips the 3 damaged JPEGs"
else
  not_ok "decode benchmark: exit $rc" "$out"
fi

cli_summary
