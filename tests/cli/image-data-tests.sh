#!/usr/bin/env bash
# Command-line tests of the test-image data: `conflux-bench make-images` writes the same bytes
# twice for the same options (and other bytes for another seed), the ImageNet-style layout
# with its PNG and damaged files, refuses a non-empty --out, and `conflux-bench decode` runs on
# what it wrote, skipping the damaged files. With --like imagenet: the same bytes twice, the
# class folders, gray, CMYK and PNG files where asked for, varied sizes near ImageNet's, and
# conflux trains on the folder and on its pack to the same digest (so it decodes every file).
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

# --- --like imagenet ---------------------------------------------------------------------------
INET=(--like imagenet --train 60 --val 20 --classes 20 --gray-every 7 --cmyk-every 11 --png-every 13)
out_i=$("$BENCH" make-images --data "$DATA" --out "$TMP/i1" "${INET[@]}" 2>&1)
rc_i1=$?
"$BENCH" make-images --data "$DATA" --out "$TMP/i2" "${INET[@]}" >/dev/null 2>&1
rc_i2=$?
sums() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs sha256sum); }
n_i=$(sums "$TMP/i1" | wc -l)
if [ "$rc_i1" -eq 0 ] && [ "$rc_i2" -eq 0 ] && [ "$n_i" -eq 80 ] && [ "$(sums "$TMP/i1")" = "$(sums "$TMP/i2")" ]; then
  ok "--like imagenet twice: the same sha256 of all $n_i files"
else
  not_ok "--like imagenet twice: exit $rc_i1/$rc_i2, $n_i files, or other bytes" "$out_i"
fi

# 20 class folders per split, class0000..class0019, none empty (3 train, 1 val image each).
layout_ok=1
for split in train val; do
  [ "$(find "$TMP/i1/$split" -mindepth 1 -maxdepth 1 -type d | wc -l)" -eq 20 ] || layout_ok=0
  for k in $(seq 0 19); do
    [ -n "$(ls -A "$TMP/i1/$split/$(printf 'class%04d' "$k")" 2>/dev/null)" ] || layout_ok=0
  done
done
odd=$(cd "$TMP/i1" && find . -type f | grep -cvE '^\./(train|val)/(class[0-9]{4})/\2_[0-9]{7}\.(JPEG|png)$')
if [ "$layout_ok" -eq 1 ] && [ "$odd" -eq 0 ]; then
  ok "--like imagenet layout: 20 non-empty class folders per split, <class>/<class>_<index>.JPEG|png"
else
  not_ok "--like imagenet layout: odd names $odd" "$(cd "$TMP/i1" && find . | head -30)"
fi

# What the files hold, read from their bytes: JPEG frame headers (components, sampling) and
# PNG headers. Gray every 7th, CMYK every 11th, PNG every 13th image of each split (PNG first,
# then gray): train 8 gray, 5 CMYK, 4 PNG; val 2, 1, 1.
stats=$(python3 - "$TMP/i1" <<'EOF'
import pathlib, struct, sys
kinds = {"rgb": 0, "gray": 0, "cmyk": 0, "png": 0}
sizes, jpeg_bytes, jpeg_pixels, s444, s420 = set(), 0, 0, 0, 0
widths, heights = [], []
for f in sorted(pathlib.Path(sys.argv[1]).rglob("*.*")):
    b = f.read_bytes()
    if b[:8] == b"\x89PNG\r\n\x1a\n":
        w, h = struct.unpack(">II", b[16:24])
        kinds["png"] += 1
    else:
        i = 2  # past SOI: skip segments up to the frame header (SOF0-2)
        while b[i] == 0xFF and b[i + 1] not in (0xC0, 0xC1, 0xC2):
            i += 2 + struct.unpack(">H", b[i + 2:i + 4])[0]
        h, w, n = struct.unpack(">HHB", b[i + 5:i + 10])
        kinds[{1: "gray", 3: "rgb", 4: "cmyk"}[n]] += 1
        if n == 3:
            s444 += b[i + 11] == 0x11
            s420 += b[i + 11] == 0x22
        jpeg_bytes += len(b)
        jpeg_pixels += w * h
    sizes.add((w, h))
    widths.append(w)
    heights.append(h)
print(kinds["rgb"], kinds["gray"], kinds["cmyk"], kinds["png"], len(sizes),
      round(sum(widths) / len(widths)), round(sum(heights) / len(heights)),
      round(jpeg_bytes / jpeg_pixels, 3), s420, s444)
EOF
)
read -r n_rgb n_gray n_cmyk n_png n_sizes mean_w mean_h bpp n420 n444 <<<"$stats"
if [ "${n_gray:-0}" -eq 10 ] && [ "${n_cmyk:-0}" -eq 6 ] && [ "${n_png:-0}" -eq 5 ] && [ "${n_rgb:-0}" -eq 59 ]; then
  ok "--like imagenet kinds from the bytes: $n_rgb RGB, $n_gray gray, $n_cmyk CMYK JPEGs, $n_png PNGs"
else
  not_ok "--like imagenet kinds: rgb/gray/cmyk/png/... = $stats" "$out_i"
fi
# Sizes and bytes per pixel near ImageNet's (400x350, 0.8 at q90; 80 images: wide bounds).
if [ "${n_sizes:-0}" -ge 40 ] && [ "${mean_w:-0}" -ge 300 ] && [ "${mean_w:-0}" -le 500 ] &&
  [ "${mean_h:-0}" -ge 260 ] && [ "${mean_h:-0}" -le 440 ] &&
  python3 -c "import sys; sys.exit(0 if 0.55 <= ${bpp:-0} <= 1.1 else 1)" &&
  [ "${n444:-0}" -ge 1 ] && [ "${n420:-0}" -gt "${n444:-0}" ]; then
  ok "--like imagenet sizes: $n_sizes distinct, mean ${mean_w}x${mean_h}, $bpp JPEG bytes/pixel, 4:2:0 $n420 / 4:4:4 $n444"
else
  not_ok "--like imagenet sizes/bytes: $stats" "$out_i"
fi

# conflux reads every file (gray, CMYK, PNG with alpha) from the folder and from its pack:
# one audited epoch each, the same model digest.
cat >"$TMP/inet.toml" <<EOF
[run]
name = "inet"
seed = 3
[cluster]
trainers = 1
[data]
dataset = "image-folder"
path = "$TMP/i1"
channels = 3
[transform]
resized_crop = 32
[[model.layers]]
type = "conv2d"
out = 4
kernel = 3
padding = 1
[[model.layers]]
type = "relu"
[[model.layers]]
type = "maxpool"
kernel = 8
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "linear"
out = 20
[train]
epochs = 1
batch_size = 20
lr = 0.05
log_every = 0
EOF
"$CONFLUX" data pack --dataset image-folder --path "$TMP/i1" --out "$TMP/ipack" >"$TMP/ipack.log" 2>&1
"${MPIRUN[@]}" -np 1 "$CONFLUX" train --config "$TMP/inet.toml" --set "run.dir=$TMP/run-if" \
  --set data.audit=true >"$TMP/if.log" 2>&1
"${MPIRUN[@]}" -np 1 "$CONFLUX" train --config "$TMP/inet.toml" --set "run.dir=$TMP/run-ip" \
  --set data.audit=true --set data.dataset=packed --set "data.path=$TMP/ipack" >"$TMP/ip.log" 2>&1
d_folder=$(digest_of "$TMP/if.log")
if [ -n "$d_folder" ] && [ "$(digest_of "$TMP/ip.log")" = "$d_folder" ] &&
  grep -q "audit: all 60 samples used exactly once" "$TMP/if.log" &&
  grep -q "audit: all 60 samples used exactly once" "$TMP/ip.log"; then
  ok "conflux trains on the --like imagenet folder and its pack: every file decoded, digest $d_folder"
else
  not_ok "train on --like imagenet: folder '$d_folder', pack '$(digest_of "$TMP/ip.log")'" \
    "$(cat "$TMP/ipack.log" "$TMP/if.log" "$TMP/ip.log")"
fi

expect_fail "make-images rejects --like foo" 2 "--like 'foo': the only kind is 'imagenet'" -- \
  "$BENCH" make-images --data-dir "$DATA" --out "$TMP/e1" --like foo
expect_fail "--like imagenet refuses fewer images than classes" 2 "--train 60 with --classes 1000" -- \
  "$BENCH" make-images --data-dir "$DATA" --out "$TMP/e2" --like imagenet --train 60 --val 0
expect_fail "--like imagenet refuses --size" 2 "leave --size out" -- \
  "$BENCH" make-images --data-dir "$DATA" --out "$TMP/e3" --like imagenet --size 40-90
expect_fail "--classes needs --like imagenet" 2 "--classes needs --like imagenet" -- \
  "$BENCH" make-images --data-dir "$DATA" --out "$TMP/e4" --classes 5

cli_summary
