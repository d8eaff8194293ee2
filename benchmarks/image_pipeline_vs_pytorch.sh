#!/usr/bin/env bash
# Benchmark: training samples/s per core of the input pipeline on an image folder, conflux
# against PyTorch, both on one thread, in this one script run on the same machine.
#   conflux: conflux-bench image-pipeline: data::BatchBuilder (1 thread) over an
#            ImageFolderSource: read, decode_image (libjpeg-turbo, full size), random resized
#            crop 224 + flip + normalise, batches of 64.
#   pytorch: benchmarks/pytorch_image_pipeline.py: torchvision ImageFolder + DataLoader
#            (num_workers=0, torch.set_num_threads(1)), RandomResizedCrop(224) +
#            RandomHorizontalFlip + ToTensor + Normalize, batches of 64.
# Same files, same samples per pass, one warm-up pass each; ROUNDS rounds alternate the two
# (each process times REPS passes), and the medians over all timed passes are compared.
# Usage: benchmarks/image_pipeline_vs_pytorch.sh [IMAGES_DIR]
#   without IMAGES_DIR: conflux-bench make-images --train 1000 --size 200-500 into
#   bench-results/images-200-500 (made once, reused).
# Target: conflux >= 2x PyTorch. Results: bench-results/image_pipeline_vs_pytorch.json
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=tools/data-env.sh
source tools/data-env.sh
BENCH=${CONFLUX_BIN:-build/bin}/conflux-bench
OUT=bench-results
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-2}
SAMPLES=${SAMPLES:-0}
mkdir -p "$OUT"
IMAGES=${1:-$OUT/images-200-500}
if [ ! -d "$IMAGES/train" ]; then
  echo "making $IMAGES: 1000 CIFAR-10 train images upscaled to 200-500 px (JPEG, quality 90)"
  "$BENCH" make-images --data-dir "$CONFLUX_DATA" --out "$IMAGES" --train 1000 --val 0 \
    --size 200-500 >/dev/null
fi

# Debian's python3-torch belongs to the system interpreter, not to a pyenv/venv one.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
have_torch=1
if ! "$PY" -c 'import torch, torchvision, PIL' 2>/dev/null; then
  have_torch=0
  echo "skip: python3-torch / python3-torchvision / python3-pil are not installed"
  echo "      (apt-get install python3-torchvision); no PyTorch baseline, conflux only"
fi

common=(--images "$IMAGES" --samples "$SAMPLES" --batch 64 --size 224 --repetitions "$REPS"
  --warmup 1)
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS: conflux"
  "$BENCH" image-pipeline "${common[@]}" --json "$OUT/image_pipeline-conflux-r$r.json" \
    >"$OUT/image_pipeline-conflux-r$r.txt"
  if [ "$have_torch" = 1 ]; then
    echo "round $r/$ROUNDS: pytorch"
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
      "$PY" benchmarks/pytorch_image_pipeline.py "${common[@]}" \
      --json "$OUT/image_pipeline-pytorch-r$r.json" >/dev/null
  fi
done
echo
cat "$OUT/image_pipeline-conflux-r1.txt"
echo

"$PY" - "$OUT" "$ROUNDS" "$have_torch" "$IMAGES" <<'PY'
import glob, json, os, platform, statistics, subprocess, sys
out, rounds, have_torch, images = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
def load(side):
    return [json.load(open(f"{out}/image_pipeline-{side}-r{r}.json")) for r in range(1, rounds + 1)]
c_runs = load("conflux")
c_rates = [x for run in c_runs for x in
           [float(v) for v in run["tables"][0]["rows"][0]["passes"].strip("[]").split()]]
c = statistics.median(c_rates)
cpu = subprocess.run("lscpu | sed -n 's/^Model name: *//p'", shell=True, capture_output=True,
                     text=True).stdout.strip()
result = {"benchmark": "image_pipeline_vs_pytorch", "images": images, "cpu": cpu,
          "samples_per_pass": c_runs[0]["summary"]["samples_per_pass"],
          "conflux_samples_per_s_per_core": c, "conflux_passes": c_rates,
          "conflux_stages_us": {k: c_runs[0]["summary"][k]
                                for k in ("read_us", "decode_us", "transform_us")},
          "pytorch_samples_per_s_per_core": None, "conflux_over_pytorch": None,
          "target": ">= 2", "met": None}
print(f"{'1 thread, batches of 64, 224x224':44}{'samples/s':>10}  passes")
print(f"{'conflux (BatchBuilder, decode_image)':44}{c:10.1f}  {' '.join(f'{x:.1f}' for x in c_rates)}")
if have_torch:
    t_runs = load("pytorch")
    t_rates = [x for run in t_runs for x in run["samples_per_s_per_rep"]]
    t = statistics.median(t_rates)
    ratio = c / t
    info = t_runs[0]
    result.update({"pytorch_samples_per_s_per_core": t, "pytorch_passes": t_rates,
                   "conflux_over_pytorch": ratio, "met": ratio >= 2,
                   "pytorch": {k: info[k] for k in ("torch", "torchvision", "pillow",
                                                    "pillow_libjpeg_turbo", "pillow_simd")}})
    print(f"{'pytorch (ImageFolder + DataLoader, PIL)':44}{t:10.1f}  {' '.join(f'{x:.1f}' for x in t_rates)}")
    print(f"ratio conflux/pytorch = {ratio:.2f} (target >= 2): {'met' if ratio >= 2 else 'NOT met'}")
    print(f"pytorch side: torch {info['torch']}, torchvision {info['torchvision']}, Pillow "
          f"{info['pillow']} (libjpeg-turbo: {info['pillow_libjpeg_turbo']}, Pillow-SIMD: "
          f"{info['pillow_simd']})")
print("differences: both decode every JPEG at full size with libjpeg-turbo; PIL's resize in\n"
      "RandomResizedCrop is antialiased bilinear (support grows with the downscale), conflux's\n"
      "resized crop is plain bilinear; PyTorch collates (torch.stack) after ToTensor, conflux\n"
      "writes each sample into the batch tensor. CPU: " + cpu)
json.dump(result, open(f"{out}/image_pipeline_vs_pytorch.json", "w"), indent=1)
PY
