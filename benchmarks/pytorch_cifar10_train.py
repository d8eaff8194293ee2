#!/usr/bin/python3
"""PyTorch side of benchmarks/resnet20_vs_torch.sh: trains the model of a conflux run's resolved
config.toml on CIFAR-10 with the run's recipe, and prints one JSON line per epoch.

The same as the conflux run: the architecture (tools/conflux_to_torch.py build_module, in
training mode: batch norm with batch statistics, dropout active), the seed (torch.manual_seed),
the data (CIFAR-10's original binary files, the first data.train_limit training samples, the
first data.test_limit test samples), the augmentation (zero-pad transform.pad, random crop
transform.crop, horizontal flip with p = 0.5, then pixel / 255, (x - mean) / std; vectorised
per batch, as benchmarks/pytorch_ddp_mnist.py does), the batch (train.batch_size, the last
batch of an epoch partial, as conflux's), the optimiser (torch.optim.SGD with train.momentum,
train.nesterov and train.weight_decay, which conflux's SGD mirrors operation by operation) and
the learning rate set before every step by lr_at, a copy of src/model/lr_schedule.cpp.
Different: the initial weights (PyTorch's default initialisation; conflux draws its own), the
random streams (epoch order, crops, flips, dropout masks), and the threads: one process on
--threads threads (default cluster.trainers x cluster.blas_threads, conflux's compute
threads), augmenting between steps, where each conflux trainer also has
cluster.preprocess_threads building the next batches. Evaluation (conflux_to_torch.evaluate,
conflux eval's transform and scoring) is timed apart from the epoch, as conflux's
eval_seconds is. A config using anything not reproduced here exits 2 naming the key.
"""
import argparse
import contextlib
import copy
import json
import math
import pathlib
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools"))
import conflux_to_torch as c2t  # noqa: E402

TRAIN_FILES = [f"data_batch_{i}.bin" for i in range(1, 6)]
# Transform keys whose non-default values this script does not reproduce.
UNSUPPORTED_TRANSFORMS = ("resized_crop", "brightness", "contrast", "saturation",
                          "rotation_degrees", "cutout_size", "blur_kernel", "eval_resize")


def lr_at(train, step, total_steps):
    """The learning rate of global step `step` (0-based): src/model/lr_schedule.cpp's at()."""
    peak, warmup = train["lr"], train.get("warmup_steps", 0)
    if step < warmup:
        return peak * (step + 1) / warmup
    kind = train.get("lr_schedule", "constant")
    if kind == "constant":
        return peak
    if kind == "step":
        size = train.get("lr_step_size", 0)
        return peak if size == 0 else peak * train["lr_gamma"] ** (step // size)
    if kind == "multistep":
        passed = sum(1 for m in train.get("lr_milestones", []) if int(m) <= step)
        return peak * train["lr_gamma"] ** passed
    if total_steps <= warmup + 1:
        return peak
    progress = min(1.0, (step - warmup) / (total_steps - warmup - 1))
    return 0.5 * peak * (1.0 + math.cos(math.pi * progress))


def check_recipe(config, where):
    """InputError naming the first key of `config` this script does not reproduce."""
    if config.get("data", {}).get("dataset") != "cifar10":
        raise c2t.InputError(f"{where}: data.dataset must be cifar10")
    train = config.get("train", {})
    for key, allowed in (("optimizer", "sgd"), ("label_smoothing", 0.0), ("clip_grad_norm", 0.0),
                         ("init_from", "")):
        if train.get(key, allowed) != allowed:
            raise c2t.InputError(f"{where}: train.{key} = {train[key]!r} is not reproduced here")
    transform = config.get("transform", {})
    for key in UNSUPPORTED_TRANSFORMS + ("plugin",):
        if transform.get(key):
            raise c2t.InputError(f"{where}: transform.{key} = {transform[key]!r} is not "
                                 "reproduced here (pad, crop, hflip, mean and std are)")


def read_cifar_train(directory, limit):
    """(images uint8 [N,3,32,32], labels int64 [N]): the first `limit` (0 = all) samples of
    the five training batches, in file order (conflux's data.train_limit)."""
    parts = []
    for name in TRAIN_FILES:
        raw = np.fromfile(c2t.existing(directory, name), np.uint8)
        if raw.size % 3073 != 0:
            raise c2t.InputError(f"{directory / name}: not whole 3073-byte records")
        parts.append(raw.reshape(-1, 3073))
    records = np.concatenate(parts)
    if limit > 0:
        records = records[:limit]
    images = torch.from_numpy(records[:, 1:].reshape(-1, 3, 32, 32).copy())
    return images, torch.from_numpy(records[:, 0].astype(np.int64))


class Augment:
    """conflux's training transform for pad/crop/hflip/mean/std, on whole batches: zero padding
    in pixel space, a random crop per sample, a flip per sample, then normalisation."""

    def __init__(self, transform, images):
        self.pad, self.crop = transform.get("pad", 0), transform.get("crop", 0) or images.shape[2]
        self.hflip = transform.get("hflip", False)
        p = self.pad
        self.padded = nn.functional.pad(images, (p, p, p, p))  # uint8 [N, C, H+2p, W+2p]
        c = images.shape[1]
        std = torch.tensor(transform.get("std", [1.0]), dtype=torch.float32).expand(c)
        mean = torch.tensor(transform.get("mean", [0.0]), dtype=torch.float32).expand(c)
        self.scale = (1.0 / (255.0 * std)).view(1, c, 1, 1)
        self.shift = (-mean / std).view(1, c, 1, 1)
        self.channels = torch.arange(c)[None, :, None, None]
        self.window = torch.arange(self.crop)

    def __call__(self, idx, generator):
        n, (h, w) = len(idx), self.padded.shape[2:]
        dy = torch.randint(0, h - self.crop + 1, (n,), generator=generator)
        dx = torch.randint(0, w - self.crop + 1, (n,), generator=generator)
        rows = (dy[:, None] + self.window)[:, None, :, None]
        cols = (dx[:, None] + self.window)[:, None, None, :]
        x = self.padded[idx[:, None, None, None], self.channels, rows, cols]
        if self.hflip:
            flip = torch.rand(n, generator=generator) < 0.5
            x = torch.where(flip[:, None, None, None], x.flip(3), x)
        return x.float() * self.scale + self.shift


def train_epoch(model, optimizer, data, recipe, first_step, generator, device=None):
    """One epoch of SGD steps; returns (seconds, mean training loss, training accuracy).
    `device` (a GPU run): batches go to it channels-last, and with device.precision bf16 the
    forward pass runs under torch.autocast(bfloat16)."""
    images_augment, labels, train, total_steps = data
    batch = train["batch_size"]
    order = torch.randperm(len(labels), generator=generator)
    steps = (len(order) + batch - 1) // batch
    loss_sum, correct = 0.0, 0
    model.train()
    start = time.perf_counter()
    for step in range(steps):
        idx = order[step * batch:(step + 1) * batch]
        x, y = images_augment(idx, generator), labels[idx]
        if device is not None:
            x = x.to(device.name, non_blocking=True).contiguous(memory_format=torch.channels_last)
            y = y.to(device.name, non_blocking=True)
        for group in optimizer.param_groups:
            group["lr"] = lr_at(train, first_step + step, total_steps)
        bf16 = device is not None and device.precision == "bf16"
        with torch.autocast("cuda", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss_sum += float(loss) * len(idx)
        correct += int((logits.argmax(1) == y).sum())
    seconds = time.perf_counter() - start
    return seconds, loss_sum / len(labels), correct / len(labels)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", required=True, help="the conflux run's resolved config.toml")
    p.add_argument("--data", required=True, help="data directory holding cifar-10/")
    p.add_argument("--threads", type=int, default=0,
                   help="torch threads (0: cluster.trainers x cluster.blas_threads)")
    p.add_argument("--json", help="also write the JSON lines to this file")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where to train (cuda: channels_last, cudnn.benchmark; evaluation on "
                        "the CPU copy of the model, as conflux evaluates on its host model)")
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                   help="cuda: fp32 with TF32 off, or torch.autocast(bfloat16)")
    return p.parse_args(argv)


class Device:
    """A GPU run's device and precision."""

    def __init__(self, name, precision):
        self.name, self.precision = name, precision


def main(argv):
    args = parse_args(argv)
    config = c2t.read_config(args.config)
    check_recipe(config, args.config)
    cluster, train, data = config.get("cluster", {}), config["train"], config.get("data", {})
    threads = args.threads or cluster.get("trainers", 1) * cluster.get("blas_threads", 1)
    torch.set_num_threads(threads)
    torch.manual_seed(config.get("run", {}).get("seed", 42))
    model = c2t.build_module(config, args.config)
    device = None
    if args.device == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        device = Device("cuda", args.precision)
        model = model.to("cuda", memory_format=torch.channels_last)
    directory = pathlib.Path(args.data) / c2t.BUILTIN_DIRS["cifar10"]
    images, labels = read_cifar_train(directory, data.get("train_limit", 0))
    steps_per_epoch = (len(labels) + train["batch_size"] - 1) // train["batch_size"]
    total_steps = steps_per_epoch * train["epochs"]
    optimizer = torch.optim.SGD(model.parameters(), lr=train["lr"],
                                momentum=train.get("momentum", 0.0),
                                nesterov=train.get("nesterov", False),
                                weight_decay=train.get("weight_decay", 0.0))
    generator = torch.Generator().manual_seed(config.get("run", {}).get("seed", 42))
    batches = (Augment(config.get("transform", {}), images), labels, train, total_steps)
    lines = [{"torch": torch.__version__, "threads": torch.get_num_threads(),
              "device": args.device, "precision": args.precision,
              "mkldnn": torch.backends.mkldnn.is_available(), "train_samples": len(labels),
              "steps_per_epoch": steps_per_epoch, "parameters":
              sum(t.numel() for t in model.parameters())}]
    print(json.dumps(lines[0]), flush=True)
    for epoch in range(1, train["epochs"] + 1):
        seconds, loss, accuracy = train_epoch(model, optimizer, batches, train,
                                              (epoch - 1) * steps_per_epoch, generator, device)
        model.eval()
        start = time.perf_counter()
        evaluated = model if device is None else copy.deepcopy(model).cpu().float()
        n, correct, test_loss = c2t.evaluate(evaluated, config, args.data,
                                             data.get("test_limit", 0))
        lines.append({"epoch": epoch, "epoch_seconds": seconds,
                      "eval_seconds": time.perf_counter() - start, "train_loss": loss,
                      "train_accuracy": accuracy, "test_loss": test_loss,
                      "test_accuracy": correct / n, "test_samples": n})
        print(json.dumps(lines[-1]), flush=True)
    if args.json:
        pathlib.Path(args.json).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except c2t.InputError as e:
        print(f"pytorch_cifar10_train: error: {e}", file=sys.stderr)
        sys.exit(2)
