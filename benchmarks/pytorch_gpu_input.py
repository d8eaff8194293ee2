#!/usr/bin/python3
"""PyTorch's side of benchmarks/gpu_input_pipeline.sh (docs/gpu-input-pipeline.md): end-to-end
training throughput of a torchvision ResNet fed by torch.utils.data.DataLoader, one row per
worker count, appended to --json in the rows of benchmarks/gpu_input_lib.py.

The data: the same JPEG files conflux reads, read from conflux's pack (--pack DIR, the
`conflux data pack` output): index.h5 gives each sample's shard, offset, length and label
(read once with h5py), and each shard's /bytes is contiguous, so a sample is one os.pread of
its file at the dataset's offset (h5py's get_offset) plus the sample's offset: the same reads
as conflux's PackedSource. The pipeline per sample, as torchvision's ImageNet recipe: PIL
decode (convert("RGB") for gray and CMYK files), RandomResizedCrop(--image-size),
RandomHorizontalFlip, ToTensor, Normalize(ImageNet mean and std); DataLoader(batch_size=
--batch, shuffle=True, drop_last=True, num_workers=W, pin_memory=True on CUDA,
persistent_workers=True when W > 0). The model: torchvision.models.<--model>(num_classes=
--classes) in channels_last, SGD (lr 0.1, momentum 0.9, weight decay 1e-4), bf16 autocast on
CUDA (fp32 on the CPU), cudnn.benchmark = True.

Per worker count W (in the order given): a new DataLoader, --warmup steps unmeasured, then
steps until --steps were measured or --measure-s seconds passed (at least --min-steps), between
two torch.cuda.synchronize(): samples_per_s = batch x steps / seconds; data_wait_ms the mean
time a step was blocked in next() on the DataLoader's iterator; gpu_util_pct and cpu_cores as
gpu_input_lib.py samples them. A W that has not finished its warm-up within --point-limit-s
gives a "timeout" row; an exception an "error" row; the next W runs either way. Needs torch,
torchvision, pillow and h5py (all in the GPU host's python3).
"""

import argparse
import io
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gpu_input_lib import CpuSampler, append_row  # noqa: E402
from gpu_vs_torch import UtilSampler  # noqa: E402

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


class PackDataset:
    """conflux's pack (docs/datasets.md, "Layout") as a map-style dataset of (image, label);
    the shard files are opened lazily in each DataLoader worker."""

    def __init__(self, pack_dir, transform, split="train"):
        import h5py
        self.dir, self.transform, self.fds = pathlib.Path(pack_dir), transform, {}
        with h5py.File(self.dir / "index.h5", "r") as f:
            g = f[split]
            self.labels = [int(x) for x in g["labels"][:]]
            self.shard = [int(x) for x in g["shard"][:]]
            self.offset = [int(x) for x in g["offset"][:]]
            self.length = [int(x) for x in g["length"][:]]
            files = [x.decode() if isinstance(x, bytes) else str(x) for x in g["shard_files"][:]]
            self.classes = int(f.attrs["num_classes"])
        self.files, self.base = [], []
        for name in files:
            with h5py.File(self.dir / name, "r") as shard:
                base = shard["bytes"].id.get_offset()
            if base is None:
                raise RuntimeError(f"{self.dir / name}: /bytes has no file offset (not "
                                   "contiguous?)")
            self.files.append(self.dir / name)
            self.base.append(int(base))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        from PIL import Image
        s = self.shard[i]
        fd = self.fds.get(s)
        if fd is None:
            fd = self.fds[s] = os.open(self.files[s], os.O_RDONLY)
        data = os.pread(fd, self.length[i], self.base[s] + self.offset[i])
        image = Image.open(io.BytesIO(data)).convert("RGB")
        return self.transform(image), self.labels[i]


def build(a, torch, torchvision):
    from torchvision import transforms as T
    transform = T.Compose([T.RandomResizedCrop(a.image_size), T.RandomHorizontalFlip(),
                           T.ToTensor(), T.Normalize(MEAN, STD)])
    data = PackDataset(a.pack, transform)
    device = torch.device(a.device)
    model = getattr(torchvision.models, a.model)(num_classes=data.classes)
    model = model.to(device, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    return data, device, model, opt


def loader(a, torch, data, workers):
    extra = {"persistent_workers": True} if workers > 0 else {}
    return torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=True, drop_last=True,
                                       num_workers=workers, pin_memory=a.device == "cuda",
                                       **extra)


def one_point(a, torch, data, device, model, opt, workers):
    """Trains at one worker count; returns the row's figures."""
    crit = torch.nn.CrossEntropyLoss()
    bf16 = device.type == "cuda"
    dl = loader(a, torch, data, workers)

    def batches(source):
        while True:
            yield from source

    it, waits, done, start = batches(dl), [], 0, time.monotonic()
    gpu = UtilSampler(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0",
                      period=0.2).start() if bf16 else None
    cpu = CpuSampler().start()
    t0 = None
    try:
        while True:
            if done == a.warmup:
                if bf16:
                    torch.cuda.synchronize()
                t0 = time.monotonic()
            elif done < a.warmup and time.monotonic() - start > a.point_limit_s:
                return {"status": "timeout", "message": f"warm-up ({done} of {a.warmup} steps) "
                        f"not done within {a.point_limit_s:.0f} s"}
            measured = done - a.warmup
            if t0 is not None and (measured >= a.steps or (
                    measured >= a.min_steps and time.monotonic() - t0 >= a.measure_s)):
                break
            w = time.monotonic()
            x, y = next(it)
            if t0 is not None:
                waits.append(time.monotonic() - w)
            x = x.to(device, non_blocking=True).contiguous(memory_format=torch.channels_last)
            y = y.to(device, non_blocking=True)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = crit(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            done += 1
        if bf16:
            torch.cuda.synchronize()
        t1 = time.monotonic()
    finally:
        if gpu:
            gpu.stop()
        cpu.stop()
        del it, dl  # ends the persistent workers before the next point
    steps = done - a.warmup
    return {"status": "ok", "steps": steps, "seconds": round(t1 - t0, 3),
            "samples_per_s": round(a.batch * steps / (t1 - t0), 1),
            "data_wait_ms": round(1e3 * sum(waits) / len(waits), 2),
            "gpu_util_pct": gpu.mean(t0, t1)[0] if gpu else None,
            "cpu_cores": cpu.cores(t0, t1), "final_loss": round(float(loss), 4)}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pack", required=True, help="the conflux pack directory")
    p.add_argument("--json", required=True, help="rows are appended here")
    p.add_argument("--workers", default="15,8,4,2,1,0", help="DataLoader worker counts")
    p.add_argument("--model", default="resnet50", choices=["resnet50", "resnet18"])
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--min-steps", type=int, default=3)
    p.add_argument("--measure-s", type=float, default=10.0)
    p.add_argument("--point-limit-s", type=float, default=60.0)
    p.add_argument("--deadline", type=float, default=0.0,
                   help="time.time() after which no further worker count starts (0: none)")
    a = p.parse_args(argv)
    try:
        counts = [int(w) for w in a.workers.split(",")]
    except ValueError:
        p.error(f"--workers {a.workers!r}: expected comma-separated integers")
    import torch
    import torchvision
    if a.device == "cuda" and not torch.cuda.is_available():
        print("pytorch_gpu_input: --device cuda but torch sees no GPU", file=sys.stderr)
        return 3
    torch.backends.cudnn.benchmark = True
    data, device, model, opt = build(a, torch, torchvision)
    print(f"pytorch_gpu_input: torch {torch.__version__}, torchvision {torchvision.__version__}"
          f", {len(data)} samples in {data.classes} classes, {a.model} on {device}",
          file=sys.stderr, flush=True)
    for w in counts:
        row = {"model": a.model, "pipeline": "pytorch", "workers": w, "ratio": "-",
               "batch": a.batch, "reader": "pack (os.pread)", "decode": "PIL"}
        if a.deadline and time.time() > a.deadline:
            row.update(status="skipped", message="the benchmark's budget was spent")
        else:
            try:
                row.update(one_point(a, torch, data, device, model, opt, w))
            except Exception as e:  # noqa: BLE001 (a row saying why, then the next W)
                row.update(status="error", message=f"{type(e).__name__}: {e}"[:800])
        append_row(a.json, row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
