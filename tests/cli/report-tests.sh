#!/usr/bin/env bash
# Command-line tests of `conflux report` (docs/report.md): a short checkpointed job with
# data.offload_ratio = "auto" (MNIST, 1 trainer + 2 workers, augmentation heavy enough to be
# input-bound, so the controller decides), then its report: every PNG is a real image, the
# folder copied elsewhere loads in headless Chromium with every image, the screenshot is not
# blank, the page holds the run's digest and decisions. Also: --output, a job reported while
# it runs and after a SIGKILL, runs with only some files (a cut steps line, no timeline, only
# metrics.jsonl) still get a report saying what is missing, and the
# errors (missing directory, malformed file, gnuplot missing) exit 2 naming what is wrong.
# Needs Debian's gnuplot-nox and chromium. About 50 s on 2 cores.
set -uo pipefail
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

if [ ! -d "$DATA/mnist" ]; then
  echo "skip - report CLI tests: MNIST not found under $DATA"
  cli_summary
  exit
fi
CHROMIUM=$(command -v chromium || command -v chromium-browser)
missing=()
command -v gnuplot >/dev/null || missing+=(gnuplot-nox)
[ -n "$CHROMIUM" ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  not_ok "the report tests need Debian packages: ${missing[*]} (tools/install-deps.sh ${missing[*]})"
  cli_summary
  exit
fi

FIGURES=(loss accuracy throughput data-wait offload checkpoints)

# png_check FILE...: each is a PNG of 900x560 pixels holding more than a blank plot would.
png_check() {
  python3 - "$@" <<'PY'
import struct, sys
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{path}: not a PNG"
    size = struct.unpack(">II", data[16:24])
    assert size == (900, 560), f"{path}: {size}"
    assert len(data) > 8000, f"{path}: only {len(data)} bytes"
PY
}

cat >"$TMP/job.toml" <<'TOML'
[run]
name = "report-test"
seed = 7
[cluster]
trainers = 1
[data]
dataset = "mnist"
train_limit = 12000
test_limit = 1000
offload_ratio = "auto"
[transform]
rotation_degrees = 15
blur_kernel = 3
blur_probability = 1.0
mean = [0.1307]
std = [0.3081]
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "linear"
out = 10
[train]
epochs = 2
batch_size = 64
lr = 0.05
log_every = 10
[checkpoint]
every_steps = 25
[profile]
initial_steps = 2
steps = 8
interval_s = 0.1
TOML

expect_fail "missing run directory: exit 2 naming it" 2 "$TMP/nope: no such run directory" -- \
  "$CONFLUX" report "$TMP/nope"
out=$("$CONFLUX" report --help 2>&1)
if [ $? -eq 0 ] && grep -q 'conflux report RUN_DIR \[--output DIR\]' <<<"$out" &&
  grep -q -- '--output' <<<"$out"; then
  ok "report --help: usage, exit 0"
else
  not_ok "report --help" "$out"
fi
expect_fail "report without a run directory" 2 "usage: conflux report RUN_DIR" -- "$CONFLUX" report

run=$TMP/run
"${MPIRUN[@]}" -np 3 "$CONFLUX" train --config "$TMP/job.toml" --set "run.dir=$run" \
  >"$TMP/train.log" 2>&1
rc=$?
decisions=$(cat "$run"/decisions-trainer*.jsonl 2>/dev/null | wc -l)
if [ "$rc" -eq 0 ] && [ -s "$run/steps.jsonl" ] && [ "$decisions" -ge 1 ] &&
  ls "$run"/checkpoints/ckpt-*.h5 >/dev/null 2>&1; then
  ok "checkpointed auto-offload job: $decisions decision(s), steps.jsonl, checkpoints"
else
  not_ok "training job: rc $rc, $decisions decision(s)" "$(cat "$TMP/train.log")"
fi

start=$SECONDS
out=$("$CONFLUX" report "$run" 2>&1)
rc=$?
page=$run/report/index.html
pngs=()
for f in "${FIGURES[@]}"; do pngs+=("$run/report/$f.png"); done
if [ "$rc" -eq 0 ] && [ "$out" = "$page" ] && [ -s "$page" ] && png_check "${pngs[@]}"; then
  ok "report: exit 0 in $((SECONDS - start)) s, prints $page, ${#pngs[@]} PNGs of 900x560"
else
  not_ok "report: rc $rc, printed '$out'" "$out$(ls -la "$run/report" 2>&1)"
fi

# The page: the digest from summary.json, every figure, one table row per decision, and
# nothing missing for a complete run.
digest=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["digest"])' \
  "$run/summary.json")
rows=$(grep -c '^<tr><td class="num">[0-9]*</td><td class="num">0</td>' "$page")
imgs=$(grep -c '<img src="[a-z-]*\.png"' "$page")
if [ -n "$digest" ] && grep -qF "$digest" "$page" && [ "$imgs" -eq 6 ] &&
  [ "$rows" -eq "$decisions" ] && ! grep -q 'Missing or partial' "$page" &&
  grep -q '<td>1 / 2</td>' "$page"; then
  ok "page: digest $digest, 6 images, $rows decision rows, 1 trainer / 2 workers, nothing missing"
else
  not_ok "page: digest '$digest', $imgs images, $rows decision rows (want $decisions)" \
    "$(sed 's/<[^>]*>/ /g' "$page" | tr -s ' \n' | head -c 3000)"
fi

# The folder works copied away: headless Chromium loads the copy with every image (a check
# script appended to a copy of the page writes what it saw into the DOM) and its screenshot
# shows the page.
cp -r "$run/report" "$TMP/copied"
sed 's#</body>#<script>window.addEventListener("load", () => { const pre = document.createElement("pre"); pre.id = "img-check"; pre.textContent = [...document.images].map(i => i.getAttribute("src") + "=" + (i.complete \&\& i.naturalWidth > 0 ? i.naturalWidth + "x" + i.naturalHeight : "broken")).join(" "); document.body.appendChild(pre); });</script></body>#' \
  "$TMP/copied/index.html" >"$TMP/copied/check.html"
start=$SECONDS
timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 \
  --force-device-scale-factor=0.5 --window-size=1000,1400 --screenshot="$TMP/shot.png" \
  --dump-dom "file://$TMP/copied/check.html" >"$TMP/dom.html" 2>"$TMP/chromium.log"
rc=$?
seen=$(grep -oP '<pre id="img-check">\K[^<]*' "$TMP/dom.html")
want=$(for f in "${FIGURES[@]}"; do printf '%s.png=900x560 ' "$f"; done)
if [ "$rc" -eq 0 ] && [ "$seen " = "$want" ]; then
  ok "Chromium ($((SECONDS - start)) s) loads the copied page with all 6 images: $seen"
else
  not_ok "Chromium: rc $rc, images '$seen' (want '$want')" "$(tail -5 "$TMP/chromium.log")"
fi

# The screenshot is the page, not a blank: a PNG decoder (zlib and the five row filters)
# counts its colours and dark pixels (text, axes, curves).
if shot=$(python3 - "$TMP/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", data[pos + 8:pos + 18])
    elif kind == b"IDAT":
        idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
assert depth == 8 and ctype in (2, 6), (depth, ctype)
bpp = 3 if ctype == 2 else 4
raw, stride = zlib.decompress(idat), w * bpp
prev, colours, dark = bytearray(stride), set(), 0
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride) if f else ():
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
        if f == 1:
            line[i] = (line[i] + a) & 255
        elif f == 2:
            line[i] = (line[i] + b) & 255
        elif f == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        else:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = bytes(line[x:x + 3])
        colours.add(px)
        dark += sum(px) < 384
    prev = line
share = dark / (w * h)
print(f"{w}x{h}, {len(colours)} colours, {100 * share:.1f} % dark pixels")
assert len(colours) >= 50 and share > 0.005, "blank"
PY
); then
  ok "screenshot: $shot"
else
  not_ok "screenshot is blank or unreadable: $shot" "$(ls -la "$TMP/shot.png" 2>&1)"
fi

out=$("$CONFLUX" report "$run" --output "$TMP/elsewhere" 2>&1)
if [ $? -eq 0 ] && [ "$out" = "$TMP/elsewhere/index.html" ] && png_check "$TMP/elsewhere/offload.png"; then
  ok "--output DIR: the report goes there"
else
  not_ok "--output" "$out"
fi

# A job reported while it runs, then killed (SIGKILL to mpirun; its ranks die with it): both
# reports are made from what is on disk, the per-rank timeline streams instead of timeline.json.
live=$TMP/live
"${MPIRUN[@]}" -np 3 "$CONFLUX" train --config "$TMP/job.toml" --set "run.dir=$live" \
  --set train.epochs=100 --set profile.timeline_flush_s=0.2 >"$TMP/live.log" 2>&1 &
launcher=$!
# Until an epoch has ended and trainer 0's timeline stream holds a checkpoint span (it is
# flushed every 0.2 s: on a fast machine the first epoch ends before the first flush that has
# one, and the report then rightly has no checkpoint figure).
for _ in $(seq 1 300); do
  [ -s "$live/metrics.jsonl" ] && grep -q '"checkpoint' "$live/timeline/rank-0.json" 2>/dev/null && break
  sleep 0.1
done
out=$("$CONFLUX" report "$live" 2>&1)
rc=$?
running=$([ -e "$live/summary.json" ] && echo finished || echo running)
mpirun_pid=$(pgrep -P "$launcher")
[ -n "$mpirun_pid" ] && kill -9 "$mpirun_pid"
wait "$launcher" 2>/dev/null  # its "Killed" notice is expected
page=$live/report/index.html
if [ "$rc" -eq 0 ] && [ "$running" = running ] && grep -q 'summary.json is missing' "$page" &&
  grep -q '<code>timeline/rank-0.json</code>' "$page" && png_check "$live/report/loss.png" \
  "$live/report/checkpoints.png"; then
  ok "a running job: report made from steps, metrics and the per-rank timeline streams"
else
  not_ok "running job: rc $rc, job $running" "$out$(tail -5 "$TMP/live.log")"
fi
sleep 0.5  # the ranks' death signal is delivered asynchronously
left=$(pgrep -f -- "run.dir=$live" | wc -l)
out=$("$CONFLUX" report "$live" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && [ "$left" -eq 0 ] && [ ! -e "$live/summary.json" ] &&
  grep -q 'summary.json is missing' "$page" && png_check "$live/report/offload.png"; then
  ok "the job killed with SIGKILL: report made, says it did not finish"
else
  not_ok "killed job: rc $rc, $left rank(s) left" "$out$(tail -5 "$TMP/live.log")"
fi

# A run cut harder: no summary.json, no timeline at all, steps.jsonl cut in its last line.
killed=$TMP/killed
cp -r "$run" "$killed"
rm -rf "$killed/summary.json" "$killed/timeline.json" "$killed/timeline" "$killed/report"
head -c -40 "$run/steps.jsonl" >"$killed/steps.jsonl"
out=$("$CONFLUX" report "$killed" 2>&1)
rc=$?
page=$killed/report/index.html
if [ "$rc" -eq 0 ] && grep -q 'summary.json is missing' "$page" &&
  grep -q 'timeline.json is missing' "$page" &&
  grep -qP 'steps.jsonl: the last line \(\d+\) is incomplete' "$page" &&
  grep -q 'Not drawn: no timeline was read' "$page" && png_check "$killed/report/loss.png" &&
  [ ! -e "$killed/report/checkpoints.png" ]; then
  ok "cut run: report made, says summary.json and timeline.json are missing, the cut line"
else
  not_ok "cut run: rc $rc" "$out$(sed 's/<[^>]*>/ /g' "$page" 2>&1 | tr -s ' \n' | head -c 2000)"
fi

# Only metrics.jsonl: per-epoch curves, the rest named as missing.
mkdir -p "$TMP/metrics-only"
cp "$run/metrics.jsonl" "$TMP/metrics-only/"
out=$("$CONFLUX" report "$TMP/metrics-only" 2>&1)
rc=$?
page=$TMP/metrics-only/report/index.html
if [ "$rc" -eq 0 ] && png_check "$TMP/metrics-only/report/loss.png" &&
  grep -q 'steps.jsonl is missing' "$page" && grep -q 'config.toml is missing' "$page" &&
  grep -q 'no profile-trainer&lt;t&gt;.jsonl' "$page" && [ "$(grep -c 'Not drawn' "$page")" -eq 3 ]; then
  ok "only metrics.jsonl: report made with the per-epoch curves, says what is missing"
else
  not_ok "metrics-only run: rc $rc" "$out$(sed 's/<[^>]*>/ /g' "$page" 2>&1 | tr -s ' \n' | head -c 2000)"
fi

printf '{"epoch": 1}\n{"epoch": 2, "train_loss": }\n{"epoch": 3}\n' >"$TMP/metrics-only/metrics.jsonl"
expect_fail "malformed metrics.jsonl: exit 2 naming file and line" 2 \
  "$TMP/metrics-only/metrics.jsonl:2: line 1, column 28: expected a value" -- \
  "$CONFLUX" report "$TMP/metrics-only"
expect_fail "gnuplot missing: exit 2 naming the package" 2 "install Debian's gnuplot-nox" -- \
  /usr/bin/env PATH=/nonexistent "$CONFLUX" report "$run"

cli_summary
