#!/usr/bin/env python3
"""PyTorch baseline of conflux-bench image-pipeline: training samples/s of torchvision's
ImageFolder + DataLoader on one thread (num_workers=0, torch.set_num_threads(1)), with the
standard ImageNet training transform: RandomResizedCrop(224) + RandomHorizontalFlip +
ToTensor + Normalize. Same folder, same number of samples per pass and same batch size as the
conflux scenario. ImageFolder decodes with PIL (Pillow's libjpeg(-turbo)) and converts to RGB;
RandomResizedCrop resizes with PIL's bilinear filter, which is antialiased (its support grows
with the downscale factor). Prints one JSON object."""

import argparse
import json
import os
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--images", required=True, help="image folder root (root/<split>/<class>/...)")
    p.add_argument("--split", default="train")
    p.add_argument("--samples", type=int, default=0, help="samples per timed pass; 0 = the split")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--repetitions", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1, help="untimed passes first")
    p.add_argument("--json", default="", help="also write the result to this file")
    a = p.parse_args()

    import PIL
    import PIL.features
    import torch
    import torchvision
    from torch.utils.data import DataLoader, RandomSampler
    from torchvision import datasets, transforms

    torch.set_num_threads(1)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(a.size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    ds = datasets.ImageFolder(os.path.join(a.images, a.split), transform=tf)
    total = a.samples if a.samples > 0 else len(ds)
    # Without replacement: whole permutations, then part of one, as conflux's epoch plan does.
    sampler = RandomSampler(ds, replacement=False, num_samples=total)
    loader = DataLoader(ds, batch_size=a.batch, sampler=sampler, num_workers=0)
    rates = []
    for rep in range(-a.warmup, a.repetitions):
        start = time.perf_counter()
        n = 0
        for images, labels in loader:
            n += images.shape[0]
        seconds = time.perf_counter() - start
        if n != total:
            sys.exit(f"pytorch_image_pipeline: built {n} samples, expected {total}")
        if rep >= 0:
            rates.append(n / seconds)
    result = {
        "benchmark": "pytorch_image_pipeline",
        "images": a.images, "split": a.split, "samples": total, "dataset_size": len(ds),
        "batch": a.batch, "size": a.size, "threads": torch.get_num_threads(),
        "num_workers": 0,
        "samples_per_s": statistics.median(rates), "samples_per_s_per_rep": rates,
        "torch": torch.__version__, "torchvision": torchvision.__version__,
        "pillow": PIL.__version__,
        "pillow_libjpeg_turbo": bool(PIL.features.check_feature("libjpeg_turbo")),
        "pillow_simd": "post" in PIL.__version__,
    }
    text = json.dumps(result)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
