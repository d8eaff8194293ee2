#!/usr/bin/python3
"""conflux's GPU trainer against PyTorch on the same device: training samples/s of one model.

Used by benchmarks/gpu_vs_torch.sh (docs/gpu-benchmark.md). The config (--config) is resolved
(blocks expanded) by `conflux config check` when it has blocks; a config whose data set is not
built in (an image folder) is checked on a small synthetic hdf5-arrays file of the model's
input size instead of its data, which need not exist here. Modes:

--system pytorch (default): the model of the resolved config built by tools/conflux_to_torch.py's
    build_module (the same layers, shapes and wiring as conflux trains), trained on synthetic
    batches: a fixed set of --num-batches random uint8 batches [B, H, W, C] with int64 labels
    in pinned host memory. Each step uploads one (non_blocking), converts it to float and
    normalises it on the device with the config's transform.mean/std (ImageNet's when absent),
    as pixel * 1 / (255 std) - mean / std like conflux, views it as NCHW (channels_last), then
    forward, cross-entropy, backward and an SGD step (train.lr, train.momentum,
    train.weight_decay, train.nesterov of the config). One JSON row per precision in
    --precision (bf16: torch.autocast bfloat16 over fp32 master weights; fp32: TF32 off for
    cuBLAS and cuDNN; tf32: TF32 on for both), then, with --compile, one torch.compile row per
    precision in --compile-precision (--compile-only: those alone). Always torch.channels_last
    and cudnn.benchmark = True. --warmup steps (--compile-warmup for compiled rows, the compile
    included) are not measured; the --steps measured steps are timed by CUDA events (per step:
    step_ms is their median) and by the wall clock between two torch.cuda.synchronize()
    (samples_per_s = batch x steps / wall). peak_mem_gib is torch.cuda.max_memory_allocated
    over the measured steps (the peak is reset after the warm-up, as conflux's is);
    gpu_util_pct the mean of utilization.gpu sampled at about 10 Hz during the measured steps (pynvml when importable, else nvidia-smi; null when neither
    works). --device cpu runs the same on the CPU (a smoke test: per-step wall-clock times, no
    memory or utilisation figures).

--system conflux: one row for conflux's trainer on the same model, batch and precision:
    `conflux-bench trainer-step --config CONFIG` (docs/benchmarks.md) with --set overrides:
    train.device = "gpu" ("cpu" with --device cpu; --conflux-device overrides),
    train.precision = --conflux-precision, augmentation off (no crop, pad or flip; the mean/std
    normalisation stays), and data.dataset = "hdf5-arrays" on a small synthetic file of the
    model's input size (the trainer takes only its input shape and classes from the data set;
    no sample is read). The trainer's own model and ComputeBackend run --warmup unmeasured and
    --steps measured steps on synthetic uint8 batches prepared in memory (on a GPU: in pinned
    memory, uploaded as bytes and normalised on the device), timed by the wall clock up to the
    GPU's wait for the steps' losses: the trainer alone, as the PyTorch rows measure PyTorch's.
    peak_mem_gib is what conflux's device buffers held at most during the measured steps (the
    figure torch.cuda.max_memory_allocated gives); gpu_util_pct is sampled as for PyTorch,
    over the measured window the scenario reports (its CLOCK_MONOTONIC stamps). When conflux
    refuses (exit 2 naming the GPU, a layer or train.device) the row's status is "refused" and
    its message conflux's error line, with no figures; a conflux that fails otherwise or times
    out gives status "error" or "timeout" and its last lines.

--report JSONL --markdown FILE: the Markdown table of the rows of a JSONL file.
--brief FILE: one short line per row of FILE (a JSONL file, or a log holding rows).

Rows are printed as JSON lines and appended to --json when given. Exit status: 0 when every
row was produced (a refused or failed row is still a row), 2 for bad input.
Needs torch, numpy and h5py (Debian: python3-torch python3-numpy python3-h5py).
"""

import argparse
import json
import math
import os
import pathlib
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import tomllib
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]
PRECISIONS = ("bf16", "fp32", "tf32")
# Transform keys turned off for conflux's synthetic run (augmentation; PyTorch's side has none).
CONFLUX_NO_AUGMENT = ("transform.resized_crop=0", "transform.crop=0", "transform.pad=0",
                      "transform.hflip=false", "transform.eval_resize=0")
TORCH_KIND = "synthetic uint8 batches in pinned host memory (upload + normalise on the device)"
TORCH_KIND_CPU = "synthetic uint8 batches in memory (CPU smoke run: not a GPU figure)"
CONFLUX_KIND = ("trainer only: conflux-bench trainer-step, synthetic uint8 batches in memory "
                "(GPU: pinned, uploaded and normalised on the device)")


class InputError(Exception):
    """Bad input: exit 2 with the message."""


def log(message):
    print(f"gpu_vs_torch: {message}", file=sys.stderr, flush=True)


def emit(row, json_path):
    line = json.dumps(row)
    print(line, flush=True)
    if json_path:
        with open(json_path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


# --- the config ----------------------------------------------------------------------------


def conflux_binary(given, name="conflux"):
    """A conflux executable: `given`, else $CONFLUX_BIN/NAME, else build/bin/NAME."""
    if given:
        return given
    return str(pathlib.Path(os.environ.get("CONFLUX_BIN", ROOT / "build/bin")) / name)


def has_blocks(config):
    layers = config.get("model", {}).get("layers", [])
    return any(layer.get("type") == "block" for layer in layers)


def load_config(args):
    """(parsed resolved config, its text) of --config: a config with blocks is resolved (blocks
    expanded, defaults filled in) by `conflux config check`, which prints the resolved config.
    The check opens the data set of a config that does not use a built-in one (an image folder:
    its classes), so such a config is checked on a small synthetic hdf5-arrays file of the
    model's input size and classes instead (data.dataset, data.path and data.num_classes of
    the resolved config then name it; the model and the transform are the config's)."""
    path = args.config
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8")
        config = tomllib.loads(text)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise InputError(f"{path}: cannot read the config: {e}") from e
    if not has_blocks(config):
        return config, text
    import conflux_to_torch as c2t
    binary = conflux_binary(args.conflux)
    command = [binary, "config", "check", "--config", str(path)]
    if config.get("data", {}).get("dataset") not in c2t.BUILTIN_SHAPES:
        shape, _ = image_shape(json.loads(json.dumps(config)), args.image_size)
        classes = classes_of(config)
        data = synthetic_data(work_root(args), shape, 16, classes, args.seed)
        command += ["--set", 'data.dataset="hdf5-arrays"', "--set", f'data.path="{data}"',
                    "--set", f"data.num_classes={classes}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    except OSError as e:
        raise InputError(f"{path} has blocks and needs `conflux config check` to resolve them, "
                         f"but {binary} cannot run: {e} (give --conflux, or a resolved config)")
    if done.returncode != 0:
        raise InputError(f"{' '.join(command)} failed (exit {done.returncode}): "
                         f"{(done.stderr or done.stdout).strip()[-2000:]}")
    try:
        return tomllib.loads(done.stdout), done.stdout
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{' '.join(command)} printed no TOML: {e}") from e


def work_root(args):
    root = pathlib.Path(args.work_dir or "bench-results/gpu_vs_torch-work")
    root.mkdir(parents=True, exist_ok=True)
    return root


def synthetic_data(root, shape, samples, classes, seed):
    """The path of a synthetic hdf5-arrays file (write_hdf5) in `root`, written once. Its
    labels lie in [0, min(classes, 10)), so that models of 10 and 1000 classes share one file
    (data.num_classes says the model's count; the work per step does not depend on labels)."""
    c, h, w = shape
    labels = min(classes, 10)
    path = (root / f"synthetic-{c}x{h}x{w}-{samples}-k{labels}.h5").resolve()
    if not path.exists():
        write_hdf5(path, samples, shape, labels, seed)
    return path


def image_shape(config, image_size):
    """The model's input [C, H, W]: the data's channels and the transform's crop side (the
    config's transform.resized_crop or transform.crop, or --image-size, which replaces it)."""
    import conflux_to_torch as c2t
    transform = config.setdefault("transform", {})
    if image_size:
        key = "resized_crop" if transform.get("resized_crop", 0) else "crop"
        transform[key] = image_size
    data = config.get("data", {})
    dataset = data.get("dataset")
    given = None
    if dataset not in c2t.BUILTIN_SHAPES:
        side = transform.get("resized_crop", 0) or transform.get("crop", 0)
        if not side:
            raise InputError(f"data.dataset = {dataset!r} without transform.resized_crop or "
                             "transform.crop: give --image-size")
        given = (data.get("channels", 3), side, side)
    return tuple(c2t.input_shape(config, "config", given)), given


def classes_of(config):
    return int(config["model"]["layers"][-1]["out"])


def model_name(config, path):
    return config.get("run", {}).get("name") or pathlib.Path(path).stem


# --- PyTorch rows --------------------------------------------------------------------------


class UtilSampler:
    """Mean GPU utilisation (utilization.gpu, percent) between start() and stop(), sampled at
    about 10 Hz: pynvml when importable, else `nvidia-smi -lms 100`; none when neither works.
    `watch` (a path) also records when its line count changes (a training run's steps.jsonl:
    benchmarks/gpu_input_lib.py). Samples carry time.monotonic() stamps, so that mean() can
    also take a window another process reported (conflux-bench trainer-step's CLOCK_MONOTONIC
    stamps)."""

    def __init__(self, device_id, period=0.1, watch=None, pid=None):
        self.device_id, self.period, self.watch = device_id, period, watch
        self.samples, self.source, self.error = [], None, None
        self.lines_at = []  # (time, line count) whenever the watched file's count changes
        self.pid, self.proc_mem = pid, []
        self._stop = threading.Event()
        self._thread = None
        self._smi = None

    def _nvml_handle(self):
        import pynvml  # nvidia-ml-py
        pynvml.nvmlInit()
        dev = str(self.device_id)
        if dev.startswith("GPU-") or dev.startswith("MIG-"):
            return pynvml, pynvml.nvmlDeviceGetHandleByUUID(dev)
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(int(dev))

    def start(self):
        try:
            nvml, handle = self._nvml_handle()
            self.source = "pynvml"
            self._thread = threading.Thread(target=self._run_nvml, args=(nvml, handle),
                                            daemon=True)
        except Exception as e:  # noqa: BLE001 (no pynvml, no driver: try nvidia-smi)
            self.error = f"pynvml: {e}"
            smi = shutil.which("nvidia-smi")
            if smi is None:
                self.error += "; nvidia-smi not found"
                self._thread = threading.Thread(target=self._run_watch_only, daemon=True)
            else:
                try:
                    self._smi = subprocess.Popen(
                        [smi, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                         "-i", str(self.device_id), "-lms", str(int(self.period * 1000))],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                    self.source = "nvidia-smi"
                    self._thread = threading.Thread(target=self._run_smi, daemon=True)
                    threading.Thread(target=self._run_watch_only, daemon=True).start()
                except OSError as e2:
                    self.error += f"; nvidia-smi: {e2}"
                    self._thread = threading.Thread(target=self._run_watch_only, daemon=True)
        self._thread.start()
        return self

    def _poll_watch(self):
        if self.watch is None:
            return
        try:
            with open(self.watch, "rb") as f:
                count = f.read().count(b"\n")
        except OSError:
            count = 0
        if not self.lines_at or self.lines_at[-1][1] != count:
            self.lines_at.append((time.monotonic(), count))

    def _run_nvml(self, nvml, handle):
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                self.samples.append((now, float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)))
                if self.pid is not None:
                    for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                        if p.pid == self.pid and p.usedGpuMemory:
                            self.proc_mem.append(p.usedGpuMemory)
            except Exception as e:  # noqa: BLE001
                self.error = f"pynvml: {e}"
            self._poll_watch()
            self._stop.wait(self.period)

    def _run_smi(self):
        for line in self._smi.stdout:
            if self._stop.is_set():
                break
            try:
                self.samples.append((time.monotonic(), float(line.strip())))
            except ValueError:
                continue

    def _run_watch_only(self):
        while not self._stop.is_set():
            self._poll_watch()
            self._stop.wait(self.period)

    def stop(self):
        self._poll_watch()
        self._stop.set()
        if self._smi is not None:
            self._smi.terminate()
            try:
                self._smi.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._smi.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)
        return self

    def mean(self, begin=None, end=None):
        values = [v for t, v in self.samples
                  if (begin is None or t >= begin) and (end is None or t <= end)]
        return (round(statistics.fmean(values), 1), len(values)) if values else (None, 0)


_DEFAULT_TF32 = []  # (cuBLAS, cuDNN) TF32 flags as the process found them


def set_precision_flags(torch, precision):
    """TF32 per precision through the long-standing flags torch.backends.cuda.matmul.allow_tf32
    and torch.backends.cudnn.allow_tf32: fp32 off for both, tf32 on for both, bf16 PyTorch's
    defaults (cuBLAS off, cuDNN on; for the operations autocast leaves in fp32), which are only
    written back when an earlier row of the process changed them. Only the old flags are used:
    PyTorch 2.9+ raises when they are mixed with the newer fp32_precision settings (its
    deprecation warning is silenced). Returns the flags as read back."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 2.9+: "Please use the new API settings ..."
        current = (bool(torch.backends.cuda.matmul.allow_tf32),
                   bool(torch.backends.cudnn.allow_tf32))
        if not _DEFAULT_TF32:
            _DEFAULT_TF32.append(current)
        wanted = {"fp32": (False, False), "tf32": (True, True)}.get(precision, _DEFAULT_TF32[0])
        if wanted != current:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = wanted
        return {"tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
                "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32)}


def device_label(torch, device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"CPU: {line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"CPU: {platform.processor() or platform.machine()}"


def nvml_device_id(torch, device):
    """The device as nvidia-smi and NVML name it: CUDA_VISIBLE_DEVICES' entry, else the index."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    index = device.index or 0
    return visible[index] if index < len(visible) else str(index)


def make_batches(torch, args, shape, classes, device):
    """--num-batches random uint8 batches [B, H, W, C] and int64 labels, pinned on a GPU run."""
    c, h, w = shape
    g = torch.Generator().manual_seed(args.seed)
    images = torch.randint(0, 256, (args.num_batches, args.batch, h, w, c), generator=g,
                           dtype=torch.uint8)
    labels = torch.randint(0, classes, (args.num_batches, args.batch), generator=g,
                           dtype=torch.int64)
    if device.type == "cuda":
        images, labels = images.pin_memory(), labels.pin_memory()
    return images, labels


def torch_row(torch, args, config, shape, given, batches, precision, compiled, device):
    """One PyTorch row (a dict)."""
    import conflux_to_torch as c2t
    from torch import nn
    cuda = device.type == "cuda"
    flags = set_precision_flags(torch, precision) if cuda else {}
    torch.manual_seed(args.seed)
    model = c2t.build_module(config, args.config, given)
    params = sum(p.numel() for p in model.parameters())
    model = model.to(device, memory_format=torch.channels_last)
    model.train()
    train = config.get("train", {})
    optimizer = torch.optim.SGD(model.parameters(), lr=train.get("lr", 0.1),
                                momentum=train.get("momentum", 0.9),
                                weight_decay=train.get("weight_decay", 5e-5),
                                nesterov=train.get("nesterov", False))
    transform = config.get("transform", {})
    c = shape[0]
    mean = torch.tensor(transform.get("mean", IMAGENET_MEAN), dtype=torch.float32).expand(c)
    std = torch.tensor(transform.get("std", IMAGENET_STD), dtype=torch.float32).expand(c)
    scale = (1.0 / (255.0 * std)).view(1, c, 1, 1).to(device)
    shift = (-mean / std).view(1, c, 1, 1).to(device)
    forward = torch.compile(model) if compiled else model
    images, labels = batches
    bf16 = precision == "bf16"

    def step(i):
        x = images[i % len(images)].to(device, non_blocking=True)
        y = labels[i % len(labels)].to(device, non_blocking=True)
        # [B, H, W, C] uint8 viewed as NCHW is channels_last already; float, then normalise.
        x = x.permute(0, 3, 1, 2).float().mul_(scale).add_(shift)
        x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bf16):
            loss = nn.functional.cross_entropy(forward(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    warmup = args.compile_warmup if compiled else args.warmup
    start = time.perf_counter()
    for i in range(warmup):
        step(i)
    sync()
    warmup_s = time.perf_counter() - start
    if cuda:
        # The peak of the measured steps, as conflux-bench trainer-step reports its own.
        torch.cuda.reset_peak_memory_stats(device)
    sampler = UtilSampler(nvml_device_id(torch, device)) if cuda else None
    times = []
    if cuda:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(args.steps)]
        sampler.start()
        sync()
        start = time.perf_counter()
        for i, (begin, end) in enumerate(events):
            begin.record()
            loss = step(warmup + i)
            end.record()
        sync()
        wall = time.perf_counter() - start
        sampler.stop()
        times = [b.elapsed_time(e) for b, e in events]
    else:
        start = time.perf_counter()
        for i in range(args.steps):
            t0 = time.perf_counter()
            loss = step(warmup + i)
            times.append(1e3 * (time.perf_counter() - t0))
        wall = time.perf_counter() - start
    final_loss = float(loss)
    util, util_samples = sampler.mean() if sampler else (None, 0)
    row = {
        "status": "ok", "kind": TORCH_KIND if cuda else TORCH_KIND_CPU,
        "samples_per_s": round(args.batch * args.steps / wall, 2),
        "step_ms": round(statistics.median(times), 3),
        "step_ms_mean": round(statistics.fmean(times), 3),
        "step_timer": "cuda events" if cuda else "wall clock",
        "wall_s": round(wall, 4), "warmup_s": round(warmup_s, 3), "warmup": warmup,
        "steps": args.steps,
        "peak_mem_gib": round(torch.cuda.max_memory_allocated(device) / 2**30, 3) if cuda else None,
        "gpu_util_pct": util, "util_samples": util_samples,
        "util_source": sampler.source if sampler and util is not None else None,
        "params": params, "final_loss": round(final_loss, 4),
        "loss_finite": math.isfinite(final_loss),
    }
    if sampler and util is None:
        row["util_note"] = sampler.error or "no sample"
    row.update(flags)
    return row


def run_pytorch(args):
    try:
        import torch
    except ImportError as e:
        raise InputError(f"PyTorch is not importable by {sys.executable}: {e}") from e
    config, _ = load_config(args)
    shape, given = image_shape(config, args.image_size)
    classes = classes_of(config)
    if args.batch <= 0:
        args.batch = config.get("train", {}).get("batch_size", 128)
    if args.device == "cpu":
        device = torch.device("cpu")
        torch.set_num_threads(args.threads or os.cpu_count() or 1)
    else:
        if not torch.cuda.is_available():
            raise InputError("--device cuda but torch.cuda.is_available() is False "
                             "(use --device cpu for a CPU smoke run)")
        device = torch.device("cuda", 0)
        torch.backends.cudnn.benchmark = True
    base = {"model": args.name or model_name(config, args.config), "system": "pytorch",
            "config": args.config,
            "batch": args.batch, "image": list(shape), "classes": classes,
            "torch": torch.__version__, "device": device_label(torch, device),
            "device_type": device.type}
    batches = make_batches(torch, args, shape, classes, device)
    plan = [] if args.compile_only else [(p, False) for p in args.precision]
    if args.compile:
        plan += [(p, True) for p in args.compile_precision]
    failures = 0
    for precision, compiled in plan:
        row = dict(base, precision=precision, compile=compiled)
        if compiled and not hasattr(torch, "compile"):
            row.update(status="skipped", message=f"torch.compile needs PyTorch 2.0 or later; "
                       f"this is {torch.__version__}")
            emit(row, args.json)
            continue
        log(f"{row['model']}: batch {args.batch}, {precision}"
            f"{', torch.compile' if compiled else ''}, on {row['device']}")
        try:
            row.update(torch_row(torch, args, config, shape, given, batches, precision,
                                 compiled, device))
        except Exception as e:  # noqa: BLE001 (out of memory, compile failure: a row saying so)
            failures += 1
            row.update(status="error", message=f"{type(e).__name__}: {str(e).strip()[:1500]}")
        finally:
            if device.type == "cuda":
                torch.cuda.empty_cache()
        emit(row, args.json)
    return 0


# --- conflux's row -------------------------------------------------------------------------


def write_hdf5(path, samples, shape, classes, seed):
    """A synthetic hdf5-arrays data set: /train and /test images [N, H, W, C] uint8 chunked by
    8 samples, labels int64 in [0, classes)."""
    import h5py
    import numpy as np
    c, h, w = shape
    rng = np.random.default_rng(seed)
    tmp = pathlib.Path(str(path) + ".part")
    with h5py.File(tmp, "w") as f:
        for split, n in (("train", samples), ("test", min(samples, 64))):
            images = f.create_dataset(f"{split}/images", (n, h, w, c), np.uint8,
                                      chunks=(min(8, n), h, w, c))
            for lo in range(0, n, 256):
                hi = min(n, lo + 256)
                images[lo:hi] = rng.integers(0, 256, (hi - lo, h, w, c), np.uint8)
            f.create_dataset(f"{split}/labels", data=rng.integers(0, classes, n, np.int64))
    tmp.replace(path)


def error_message(text):
    """conflux's error line(s) from its output: the lines saying 'error', else the last line."""
    lines = [re.sub(r"^\[conflux[^\]]*\]\s*", "", line.strip()) for line in text.splitlines()
             if line.strip()]
    errors = [line for line in lines if re.search(r"\berror\b", line, re.IGNORECASE)]
    picked = errors[-3:] if errors else lines[-1:]
    return " | ".join(picked)[:2000] if picked else "(no output)"


def conflux_result(path):
    """The summary of trainer-step's --json file, or None when it holds none."""
    try:
        return json.loads(pathlib.Path(path).read_text())["summary"]
    except (OSError, ValueError, KeyError):
        return None


def run_process(command, log_file, timeout):
    """Runs `command` with its output into `log_file`; its exit code (None: killed after
    `timeout` seconds), or the OSError that kept it from starting."""
    with open(log_file, "w", encoding="utf-8") as out:
        try:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        except OSError as e:
            return e
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return None


def conflux_figures(row, s, sampler):
    """The row's figures from trainer-step's summary `s` and the utilisation samples."""
    row.update(status="ok", samples_per_s=round(s["samples_per_s"], 2),
               step_ms=round(s["step_ms"], 3), step_ms_mean=round(s["step_ms"], 3),
               step_timer="wall clock over the measured steps up to the GPU's wait for their "
               "losses, per step (a mean)",
               wall_s=round(s["measured_s"], 4), warmup_s=round(s["warmup_s"], 3),
               trainer_device=s["device"],
               device_type="cuda" if s["device_kind"] == "gpu" else "cpu",
               computes_in=s["precision"], input=s["input"], params=s["params"],
               final_loss=s["loss"] if s["loss"] is None else round(s["loss"], 4),
               loss_finite=bool(s["loss_finite"]), gpu_util_pct=None,
               computed=s.get("computed", ""),
               peak_mem_gib=(round(s["peak_device_bytes"] / 2**30, 3)
                             if s["device_kind"] == "gpu" else None))
    if s["device_kind"] == "gpu":
        row["peak_mem_note"] = ("conflux's device buffers at most, measured steps (as "
                                "torch.cuda.max_memory_allocated)")
    if sampler:
        row["gpu_util_pct"], row["util_samples"] = sampler.mean(
            s["window_start_monotonic_s"], s["window_end_monotonic_s"])
        row["util_source"] = sampler.source if row["gpu_util_pct"] is not None else None
        if row["gpu_util_pct"] is None:
            row["util_note"] = sampler.error or "no sample in the measured window"


def run_conflux(args):
    binary = conflux_binary(args.conflux_bench, "conflux-bench")
    config, text = load_config(args)
    shape, _ = image_shape(config, args.image_size)
    classes = classes_of(config)
    if args.batch <= 0:
        args.batch = config.get("train", {}).get("batch_size", 128)
    device = args.conflux_device or ("cpu" if args.device == "cpu" else "gpu")
    name = args.name or model_name(config, args.config)
    work = work_root(args) / name
    work.mkdir(parents=True, exist_ok=True)
    # trainer-step takes the config as given (its messages then name that file's lines); the
    # resolved text is kept beside the result for reference.
    (work / "resolved.toml").write_text(text)
    # The trainer reads only the input shape and class count from its data set.
    data = synthetic_data(work.parent, shape, 16, classes, args.seed)
    tag = args.conflux_precision + (f"-{args.variant}" if args.variant else "")
    result = work / f"trainer-step-{tag}.json"
    result.unlink(missing_ok=True)
    overrides = ['data.dataset="hdf5-arrays"', f'data.path="{data}"',
                 f"data.num_classes={classes}", f'train.device="{device}"',
                 f'train.precision="{args.conflux_precision}"', *CONFLUX_NO_AUGMENT,
                 *args.conflux_set]
    command = [binary, "trainer-step", "--config", str(args.config)]
    for o in overrides:
        command += ["--set", o]
    command += ["--batch", str(args.batch), "--warmup", str(args.warmup), "--steps",
                str(args.steps), "--json", str(result)]
    row = {"model": name, "config": args.config, "batch": args.batch, "image": list(shape),
           "classes": classes, "precision": args.conflux_precision, "compile": False,
           "system": "conflux", "kind": CONFLUX_KIND, "train_device": device,
           "warmup": args.warmup, "steps": args.steps, "command": " ".join(command)}
    if args.variant:
        row["variant"] = args.variant
    log(f"{name}: conflux-bench trainer-step, batch {args.batch}, train.device = {device}")
    log_file = work / f"trainer-step-{tag}.log"
    sampler = None
    if device != "cpu":
        sampler = UtilSampler(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
                              or "0").start()
    code = run_process(command, log_file, args.timeout)
    if sampler:
        sampler.stop()
    if isinstance(code, OSError):
        row.update(status="error", message=f"{binary} cannot run: {code}")
        emit(row, args.json)
        return 0
    output = log_file.read_text(errors="replace")
    row["exit_code"] = code
    summary = conflux_result(result) if code == 0 else None
    if code is None:
        row.update(status="timeout", message=f"conflux-bench trainer-step did not finish in "
                   f"{args.timeout} s (killed); last output: {error_message(output)}")
    elif code != 0:
        refused = code == 2 and re.search(r"GPU kernel|GPU path|no usable GPU|train\.device",
                                          output)
        row.update(status="refused" if refused else "error", message=error_message(output))
    elif summary is None:
        row.update(status="error", message=f"conflux-bench trainer-step ended (exit 0) but "
                   f"{result} holds no summary")
    else:
        conflux_figures(row, summary, sampler)
    emit(row, args.json)
    return 0


# --- report --------------------------------------------------------------------------------


def fmt(value, digits):
    return "" if value is None else f"{value:,.{digits}f}"


def read_rows(path):
    """The JSON rows among the lines of `path` (a JSONL file, or a log holding rows)."""
    rows = []
    for line in pathlib.Path(path).read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def brief(path):
    """One short line per row of `path`."""
    for r in read_rows(path):
        mode = "conflux" if r.get("system") == "conflux" else \
            ("compile" if r.get("compile") else "eager")
        what = (f"{r.get('samples_per_s')} samples/s, step {r.get('step_ms')} ms"
                if r.get("status") == "ok" else r.get("message", ""))
        print(f"   {r.get('status')}: {r.get('precision')} {mode}: {what}"[:400])
    return 0


def row_order(rows):
    """Rows grouped by model (in order of appearance): eager, compiled, then conflux's."""
    models = list(dict.fromkeys(r.get("model") for r in rows))
    rank = {"pytorch": 0, "conflux": 2}

    def key(ir):
        i, r = ir
        return (models.index(r.get("model")), r.get("batch", 0),
                rank.get(r.get("system"), 3) + (1 if r.get("compile") else 0), i)
    return [r for _, r in sorted(enumerate(rows), key=key)]


def report(jsonl, markdown):
    rows = row_order(read_rows(jsonl))
    lines = ["| model | batch | precision | system | samples/s | step ms | peak GiB | util % "
             "| conflux / PyTorch | note |", "|---|---:|---|---|---:|---:|---:|---:|---:|---|"]
    devices = sorted({r["device"] for r in rows if r.get("device")})
    torch_versions = sorted({r["torch"] for r in rows if r.get("torch")})
    for r in rows:
        # The ratio pairs rows of one precision: conflux bf16 against autocast, fp32 against fp32.
        # Variant rows (other conflux settings) are set against the default conflux row.
        conflux = next((c for c in rows if c.get("system") == "conflux" and c.get("status") == "ok"
                        and not c.get("variant") and c["model"] == r["model"]
                        and c["batch"] == r["batch"]
                        and c.get("precision") == r.get("precision")), None)
        ratio = ""
        if r.get("system") == "pytorch" and r.get("samples_per_s") and conflux:
            ratio = f"{conflux['samples_per_s'] / r['samples_per_s']:.3f}"
        system = "PyTorch" + (" compile" if r.get("compile") else " eager")
        if r.get("system") == "conflux":
            system = f"conflux (train.device = {r.get('train_device')}" + (
                f"; {r['variant']})" if r.get("variant") else ")")
        precision = r.get("precision", "")
        if precision == "fp32":
            precision = "fp32 (no TF32)"
        if r.get("status") == "ok":
            note = ""
            if r.get("system") == "conflux" and r.get("computes_in") not in (None,
                                                                            r.get("precision")):
                note = f"computes in {r['computes_in']} (CPU)"
            if r.get("variant") and conflux and r.get("samples_per_s"):
                note = (f"{r['samples_per_s'] / conflux['samples_per_s']:.3f} x the default "
                        f"conflux row's samples/s")
            if r.get("system") == "conflux" and "CUDA graphs" in r.get("computed", ""):
                note = "; ".join(n for n in (note, r["computed"]) if n)
            if r.get("loss_finite") is False:
                note = "loss not finite"
        else:
            note = f"**{r.get('status')}**: {r.get('message', '')}".replace("|", "\\|")
        lines.append(f"| {r['model']} | {r['batch']} | {precision} | {system} | "
                     f"{fmt(r.get('samples_per_s'), 1)} | {fmt(r.get('step_ms'), 2)} | "
                     f"{fmt(r.get('peak_mem_gib'), 2)} | {fmt(r.get('gpu_util_pct'), 0)} | "
                     f"{ratio} | {note} |")
    head = [f"Device: {', '.join(devices) or '?'}; PyTorch {', '.join(torch_versions) or '?'}.",
            *(["**CPU smoke run** (--device cpu): a test of the benchmark, not a figure."]
              if any(r.get("device_type") == "cpu" for r in rows) else []),
            "Both sides: the trainer alone, on synthetic uint8 batches in (pinned) host memory, "
            "uploaded and normalised on the device each step, warm-up excluded; samples/s by "
            "the wall clock over the measured steps; peak GiB is the most the framework's "
            "tensors held during them. PyTorch rows: step ms is the median step (CUDA events "
            "on a GPU). conflux rows (`conflux-bench trainer-step`, the trainer's own model and "
            "backend): step ms is the mean step; or the reason it did not run. "
            "conflux / PyTorch: conflux's samples/s over the row's.", ""]
    text = "\n".join(head + lines) + "\n"
    pathlib.Path(markdown).write_text(text)
    print(text, end="")
    return 0


# --- command line --------------------------------------------------------------------------


def precision_list(text):
    values = [v.strip() for v in text.split(",") if v.strip()]
    bad = [v for v in values if v not in PRECISIONS]
    if bad or not values:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a comma list of {', '.join(PRECISIONS)}")
    return values


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--config", help="conflux config (blocks are resolved with `conflux config "
                   "check`; a resolved config.toml needs no binary)")
    p.add_argument("--conflux-precision", choices=("fp32", "tf32", "bf16"), default="fp32",
                   help="train.precision of the conflux row (GPU trainers)")
    p.add_argument("--variant", default="",
                   help="--system conflux: a label for a row with other settings "
                   "(--conflux-set), set against the default row of its precision")
    p.add_argument("--system", choices=("pytorch", "conflux"), default="pytorch")
    p.add_argument("--conflux", help="conflux executable, for `conflux config check` (default "
                   "$CONFLUX_BIN/conflux, else build/bin/conflux)")
    p.add_argument("--conflux-bench", help="--system conflux: the conflux-bench executable "
                   "(default $CONFLUX_BIN/conflux-bench, else build/bin/conflux-bench)")
    p.add_argument("--name", help="the model's name in the rows (default run.name)")
    p.add_argument("--batch", type=int, default=0, help="batch size (default train.batch_size)")
    p.add_argument("--image-size", type=int, default=0,
                   help="replace the transform's crop side (default: the config's)")
    p.add_argument("--precision", type=precision_list, default=["bf16"],
                   help="comma list of bf16, fp32 (TF32 off), tf32: one eager row each")
    p.add_argument("--compile", action="store_true", help="also torch.compile rows, last")
    p.add_argument("--compile-only", action="store_true",
                   help="with --compile: the compiled rows alone (no eager rows)")
    p.add_argument("--compile-precision", type=precision_list,
                   help="precisions of the compiled rows (default: the first of --precision)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--threads", type=int, default=0, help="--device cpu: torch threads")
    p.add_argument("--warmup", type=int, default=10, help="unmeasured steps (eager and "
                   "conflux rows)")
    p.add_argument("--compile-warmup", type=int, default=0,
                   help="unmeasured steps of compiled rows, the compile included "
                   "(default --warmup + 10)")
    p.add_argument("--steps", type=int, default=30, help="measured steps")
    p.add_argument("--num-batches", type=int, default=8, help="synthetic batches in memory")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--json", help="append the rows to this JSONL file")
    p.add_argument("--conflux-device", choices=("gpu", "cpu", "auto"),
                   help="--system conflux: train.device (default gpu; cpu with --device cpu)")
    p.add_argument("--conflux-set", action="append", default=[], metavar="KEY=VALUE",
                   help="--system conflux: more --set overrides for the trainer")
    p.add_argument("--work-dir", help="small synthetic data sets (for config checks and "
                   "conflux's input shape), and conflux's resolved config, log and result under "
                   "NAME/ (default bench-results/gpu_vs_torch-work)")
    p.add_argument("--timeout", type=float, default=300, help="--system conflux: seconds")
    p.add_argument("--report", metavar="JSONL", help="write the Markdown table of these rows")
    p.add_argument("--markdown", help="--report: the Markdown file")
    p.add_argument("--brief", metavar="FILE", help="print one short line per row of FILE")
    args = p.parse_args(argv)
    if args.brief:
        return args
    if args.report:
        if not args.markdown:
            p.error("--report needs --markdown")
        return args
    if not args.config:
        p.error("--config is required")
    if args.warmup < 1 or args.steps < 1 or args.num_batches < 1:
        p.error("--warmup, --steps and --num-batches must be at least 1")
    if args.compile_only and not args.compile:
        p.error("--compile-only needs --compile")
    if args.compile_warmup <= 0:
        args.compile_warmup = args.warmup + 10
    if args.compile_precision is None:
        args.compile_precision = args.precision[:1]
    return args


def main(argv):
    args = parse_args(argv)
    if args.report:
        return report(args.report, args.markdown)
    if args.brief:
        return brief(args.brief)
    if args.system == "conflux":
        return run_conflux(args)
    return run_pytorch(args)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as e:
        print(f"gpu_vs_torch: error: {e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # conflux_to_torch's InputError too: bad config for PyTorch
        if type(e).__name__ == "InputError":
            print(f"gpu_vs_torch: error: {e}", file=sys.stderr)
            sys.exit(2)
        raise
