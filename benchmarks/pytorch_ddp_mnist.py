#!/usr/bin/env python3
"""PyTorch CPU DistributedDataParallel baseline for the MNIST MLP epoch benchmark.

Same model (784-512-256-10, ReLU), optimiser (SGD lr 0.05, momentum 0.9, wd 5e-4), global batch
128 split over the processes, and preprocessing (zero-pad 2 + random crop 28, scale, normalise
(0.1307, 0.3081)) as configs/mnist_mlp.toml. The augmentation is vectorised per batch (a strong
baseline; torchvision's per-sample PIL transforms would be slower). One thread per process,
gloo backend. Prints one JSON line per epoch from rank 0.
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn


def blas_library():
    """Every BLAS/LAPACK library mapped into this process (Debian's torch uses libblas.so.3)."""
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if any(key in path for key in ("blas", "lapack", "mkl")):
                found.add(os.path.realpath(path))
    return " ".join(sorted(found)) or "unknown"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(42)

    images = torch.from_numpy(read_idx(f"{args.data}/mnist/train-images-idx3-ubyte.gz").copy())
    labels = torch.from_numpy(read_idx(f"{args.data}/mnist/train-labels-idx1-ubyte.gz").astype(np.int64))
    padded = torch.nn.functional.pad(images, (2, 2, 2, 2))  # [N, 32, 32] uint8
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256),
                          nn.ReLU(), nn.Linear(256, 10))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    global_batch, local_batch = 128, 128 // world
    arange = torch.arange(28)
    if rank == 0:
        print(json.dumps({"torch": torch.__version__, "blas": blas_library(),
                          "threads": torch.get_num_threads(), "world": world}), flush=True)
    for epoch in range(args.epochs):
        g = torch.Generator().manual_seed(1000 + epoch)
        order = torch.randperm(len(images), generator=g)
        start = time.perf_counter()
        steps = (len(order) + global_batch - 1) // global_batch
        for step in range(steps):
            idx = order[step * global_batch:(step + 1) * global_batch]
            idx = idx[rank * local_batch:(rank + 1) * local_batch]
            n = len(idx)
            dy = torch.randint(0, 5, (n,))
            dx = torch.randint(0, 5, (n,))
            rows = (dy[:, None] + arange)[:, :, None]
            cols = (dx[:, None] + arange)[:, None, :]
            crops = padded[idx[:, None, None], rows, cols]
            x = ((crops.float() / 255.0 - 0.1307) / 0.3081).unsqueeze(1)
            out = ddp(x)
            loss = loss_fn(out, labels[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        seconds = time.perf_counter() - start
        if rank == 0:
            print(json.dumps({"epoch": epoch + 1, "epoch_seconds": seconds,
                              "samples_per_s": len(order) / seconds, "last_loss": loss.item()}),
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
