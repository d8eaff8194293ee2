"""conflux's HDF5 files read with h5py, against their documentation and what conflux reports.

  checkpoint FILE --inspect TXT [--model MODEL.h5]
      docs/checkpoints.md: the root attributes and every dataset with its documented type and
      shape (and no other dataset); the CRC-32C recomputed here by the documented recipe equals
      the stored `checksum`; the values equal what `conflux ckpt inspect` printed (TXT); with
      --model, the final checkpoint's weights equal model.h5's /params and its digest attribute.
  pack DIR --root ROOT --summary LINE
      docs/datasets.md "Layout (format_version 1)": index.h5's attributes and datasets; each
      shard's size and SHA-256 as the index records them; every sample's bytes equal the file
      ROOT/<name> it was packed from and its label is its class folder; the totals equal the
      line `conflux data pack` printed.
  converted FILE --info TXT --source DIR
      a `conflux data convert` file of MNIST: the attributes and per-split images/labels as
      `conflux data info` (TXT) describes them, the source files' SHA-256, and every pixel and
      label equal to the original idx files in DIR.

Exit: 0 all as documented; 1 a difference (printed), or h5py cannot read the file.
Run it with the test-deps virtual environment (h5py brings its own HDF5 library, not Debian's).
"""
import argparse
import gzip
import hashlib
import os
import re
import sys

import h5py
import numpy as np

KINDS = {"u1": "uint8", "u4": "uint32", "u8": "uint64", "i4": "int32", "f4": "float32",
         "f8": "float64"}


def kind(dataset):
    if dataset.dtype.kind == "S":
        return "string"
    return KINDS.get(dataset.dtype.str[1:], dataset.dtype.str)


class Problems(list):
    def expect(self, condition, message):
        if not condition:
            self.append(message)
        return condition


def crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
        table.append(c)
    return table


CRC_TABLE = crc32c_table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc = CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def text(value):
    """A stored fixed-length string: its bytes up to the first NUL."""
    return bytes(value).split(b"\0", 1)[0]


# docs/checkpoints.md, "Datasets": path -> (type, shape); a letter is a length named there.
CKPT_FIXED = {
    "/position/epoch": ("uint32", ()), "/position/step": ("uint64", ()),
    "/position/global_step": ("uint64", ()), "/position/steps_per_epoch": ("uint64", ()),
    "/position/global_batch": ("uint64", ()), "/position/dataset_size": ("uint64", ()),
    "/position/trainers": ("uint32", ()), "/position/workers": ("uint32", ()),
    "/rng/seed": ("uint64", ()), "/rng/scheme": ("string", ()),
    "/model/tensor_names": ("string", ("K",)), "/optimizer/name": ("string", ()),
    "/optimizer/steps": ("uint64", ()), "/optimizer/buffer_names": ("string", ("B",)),
    "/optimizer/lr": ("float64", ()), "/trainers/next_batch_index": ("uint64", ("T",)),
    "/trainers/offload_ratio": ("float64", ("T",)), "/trainers/offload_credit": ("float64", ("T",)),
    "/accounting/epoch_loss_sum": ("float64", ()), "/accounting/epoch_correct": ("float64", ()),
    "/accounting/epoch_samples": ("float64", ()), "/accounting/epoch_seconds": ("float64", ()),
    "/accounting/elapsed_seconds": ("float64", ()), "/accounting/audit_counts": ("float64", ("N",)),
    "/run/config": ("string", ()), "/run/metrics": ("string", ("E",)),
    "/run/created": ("string", ()),
}


def datasets(f):
    paths = []
    f.visititems(lambda name, obj: paths.append("/" + name) if isinstance(obj, h5py.Dataset) else None)
    return paths


def checkpoint_layout(f, p):
    """The documented attributes, types and shapes; returns the tensor names and total size."""
    a = f.attrs
    p.expect(text(a["format"]) == b"conflux-checkpoint", f"format attribute {a['format']!r}")
    p.expect(a["format_version"].dtype == np.int32 and a["format_version"] == 3,
             f"format_version {a['format_version']!r}, want int32 3")
    p.expect(re.fullmatch(rb"crc32c:[0-9a-f]{8}", text(a["checksum"])), f"checksum {a['checksum']!r}")
    p.expect(a["global_step"].dtype == np.uint64 and a["global_step"] == f["position/global_step"][()],
             "global_step attribute: not a uint64 copy of /position/global_step")
    p.expect(a["epoch"].dtype == np.uint32 and a["epoch"] == f["position/epoch"][()],
             "epoch attribute: not a uint32 copy of /position/epoch")
    p.expect(text(a["created"]) == text(f["run/created"][()]), "created attribute != /run/created")
    names = [text(n).decode() for n in f["model/tensor_names"][()]]
    buffers = [text(n).decode() for n in f["optimizer/buffer_names"][()]]
    total = sum(f["model"][n].size for n in names)
    want = dict(CKPT_FIXED)
    want.update({f"/model/{n}": ("float32", f["model"][n].shape) for n in names})
    want.update({f"/optimizer/buffers/{b}": ("float32", (total,)) for b in buffers})
    lengths = {"K": len(names), "B": len(buffers), "T": f["position/trainers"][()],
               "N": f["accounting/audit_counts"].shape[0], "E": f["run/metrics"].shape[0]}
    paths = datasets(f)
    p.expect(set(paths) == set(want), f"datasets not in the documentation: {sorted(set(paths) - set(want))}, "
             f"documented but missing: {sorted(set(want) - set(paths))}")
    for path in sorted(set(paths) & set(want)):
        d = f[path]
        wkind, wshape = want[path]
        wshape = tuple(lengths.get(x, x) for x in wshape)
        p.expect(kind(d) == wkind and d.shape == wshape,
                 f"{path}: {kind(d)} {d.shape}, documented {wkind} {wshape}")
        p.expect(d.chunks is None and d.compression is None, f"{path}: chunked or compressed")
    return names, buffers, total


def checkpoint_checksum(f):
    """docs/checkpoints.md "Checksum": header and data of every dataset in byte order of path."""
    crc = 0
    for path in sorted(datasets(f), key=lambda s: s.encode()):
        d = f[path]
        crc = crc32c(f"{path}\n{kind(d)}\n[{','.join(map(str, d.shape))}]\n".encode(), crc)
        values = d[()]
        if kind(d) == "string":
            for s in np.atleast_1d(values):
                crc = crc32c(text(s) + b"\0", crc)
        else:
            crc = crc32c(np.ascontiguousarray(values, dtype=d.dtype.newbyteorder("<")).tobytes(), crc)
    return f"crc32c:{crc:08x}"


def inspected(report, pattern):
    m = re.search(pattern, report, re.M)
    return m.groups() if m else None


def checkpoint_against_inspect(f, report, names, buffers, total, p):
    v = lambda path: f[path][()]  # noqa: E731
    checks = [
        (r"^  checksum +(\S+) \(verified\)$", (text(f.attrs["checksum"]).decode(),)),
        (r"^  epoch +(\d+)$", (str(v("position/epoch")),)),
        (r"^  step +(\d+) / (\d+) steps per epoch$",
         (str(v("position/step")), str(v("position/steps_per_epoch")))),
        (r"^  global step +(\d+)$", (str(v("position/global_step")),)),
        (r"^  global batch +(\d+) samples of (\d+)$",
         (str(v("position/global_batch")), str(v("position/dataset_size")))),
        (r"^  seed +(\d+)$", (str(v("rng/seed")),)),
        (r"^  ranks +(\d+) trainers, (\d+) workers$",
         (str(v("position/trainers")), str(v("position/workers")))),
        (r"^model: (\d+) tensors, (\d+) parameters$", (str(len(names)), str(total))),
        (r"^optimizer: (\S+)$", (text(v("optimizer/name")).decode(),)),
        (r"^optimizer: \S+\n  steps +(\d+)$", (str(v("optimizer/steps")),)),
        (r"^  learning rate +(\S+)$", (repr(float(v("optimizer/lr"))),)),
        (r"^trainers: (\d+)$", (str(len(v("trainers/next_batch_index"))),)),
        (r"^  correct +(\d+)$", (str(int(v("accounting/epoch_correct"))),)),
        (r"^  samples +(\d+)$", (str(int(v("accounting/epoch_samples"))),)),
        (r"^metrics: (\d+) lines$", (str(f["run/metrics"].shape[0]),)),
    ]
    for pattern, want in checks:
        got = inspected(report, pattern)
        p.expect(got == want, f"ckpt inspect /{pattern}/: {got}, h5py reads {want}")
    for n in names:
        shape = ", ".join(map(str, f["model"][n].shape))
        p.expect(re.search(rf"^  {re.escape(n)} \[{shape}\]$", report, re.M),
                 f"ckpt inspect does not list {n} [{shape}]")
    for b in buffers:
        p.expect(re.search(rf"^  {b} +\[{total}\]$", report, re.M), f"ckpt inspect: no {b} [{total}]")
    config = text(v("run/config")).decode().strip().splitlines()
    shown = [line[4:] for line in report.split("\nconfig\n", 1)[-1].splitlines()]
    p.expect(shown == config, "ckpt inspect's config is not /run/config")


def check_checkpoint(args, p):
    with h5py.File(args.file, "r") as f:
        names, buffers, total = checkpoint_layout(f, p)
        stored, computed = text(f.attrs["checksum"]).decode(), checkpoint_checksum(f)
        p.expect(stored == computed, f"checksum: stored {stored}, recomputed {computed}")
        with open(args.inspect) as r:
            checkpoint_against_inspect(f, r.read(), names, buffers, total, p)
        if args.model:
            with h5py.File(args.model, "r") as m:
                same = all(np.array_equal(m["params"][n][()], f["model"][n][()]) for n in names)
                p.expect(set(m["params"]) == set(names) and same,
                         f"{args.model}: /params differ from the checkpoint's /model")
                digest = m.attrs["digest"]
                digest = digest.decode() if isinstance(digest, bytes) else str(digest)
                p.expect(digest == args.digest, f"model.h5 digest {digest}, conflux printed {args.digest}")
        return (f"checkpoint {os.path.basename(args.file)}: {len(datasets(f))} datasets as documented, "
                f"{stored} recomputed, {len(names)} tensors ({total} parameters) as ckpt inspect shows"
                + (", model.h5 equal" if args.model else ""))


# docs/datasets.md, "Layout (format_version 1)": per split, dataset -> (type, length).
PACK_SPLIT = {"labels": ("int32", "N"), "shard": ("uint32", "N"), "offset": ("uint64", "N"),
              "length": ("uint32", "N"), "name_bytes": ("uint8", "total"), "name_end": ("uint64", "N"),
              "shard_files": ("string", "S"), "shard_sha256": ("string", "S"),
              "shard_bytes": ("uint64", "S"), "shard_file_size": ("uint64", "S")}


def strings(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def check_pack_split(directory, root, g, split, class_names, p):
    """One split's datasets, shards and samples; returns (samples, bytes, shards)."""
    n, s = g["labels"].shape[0], g["shard_files"].shape[0]
    lengths = {"N": n, "S": s, "total": g["name_bytes"].shape[0]}
    for name, (wkind, wlen) in PACK_SPLIT.items():
        d = g[name]
        p.expect(kind(d) == wkind and d.shape == (lengths[wlen],),
                 f"/{split}/{name}: {kind(d)} {d.shape}, documented {wkind} [{lengths[wlen]}]")
    files = [text(x).decode() for x in g["shard_files"][()]]
    p.expect(files == [f"{split}-{i:05d}.h5" for i in range(s)], f"/{split}/shard_files {files}")
    shards = []
    for i, name in enumerate(files):
        path = os.path.join(directory, name)
        with open(path, "rb") as fh:
            sha = hashlib.sha256(fh.read()).hexdigest()
        p.expect(text(g["shard_sha256"][i]).decode() == sha, f"{name}: SHA-256 {sha} not the index's")
        p.expect(g["shard_file_size"][i] == os.path.getsize(path), f"{name}: size not the index's")
        with h5py.File(path, "r") as sf:
            b = sf["bytes"]
            p.expect(kind(b) == "uint8" and b.chunks is None and b.compression is None and
                     b.shape == (g["shard_bytes"][i],), f"{name}: /bytes {kind(b)} {b.shape} chunks {b.chunks}")
            shards.append(b[()].tobytes())
    ends = g["name_end"][()]
    names_blob = g["name_bytes"][()].tobytes()
    bad = 0
    for i in range(n):
        name = names_blob[ends[i - 1] if i else 0:ends[i]].decode()
        o, k = int(g["offset"][i]), int(g["length"][i])
        with open(os.path.join(root, split, name), "rb") as fh:
            original = fh.read()
        label = class_names.index(name.split("/")[0])
        bad += shards[g["shard"][i]][o:o + k] != original or g["labels"][i] != label
    p.expect(bad == 0, f"/{split}: {bad} of {n} samples differ from their files or class")
    return n, int(g["shard_bytes"][()].sum()), s


def check_pack(args, p):
    with h5py.File(os.path.join(args.file, "index.h5"), "r") as f:
        a = f.attrs
        p.expect(a["format_version"].dtype == np.int32 and a["format_version"] == 1,
                 f"format_version {a['format_version']!r}")
        p.expect(strings([a["dataset"]]) == ["image-folder"], f"dataset {a['dataset']!r}")
        class_names, splits = strings(a["class_names"]), strings(a["splits"])
        p.expect(a["num_classes"].dtype == np.int32 and a["num_classes"] == len(class_names),
                 f"num_classes {a['num_classes']!r} for {len(class_names)} class names")
        p.expect(class_names == sorted(os.listdir(os.path.join(args.root, splits[0]))),
                 f"class_names {class_names}")
        totals = [check_pack_split(args.file, args.root, f[s], s, class_names, p) for s in splits]
    n, size, shards = (sum(t[i] for t in totals) for i in range(3))
    summary = f"{n} samples, {size} bytes in {shards} shards"
    p.expect(summary in args.summary, f"h5py: '{summary}'; conflux data pack: '{args.summary}'")
    return f"pack: splits {splits}, {summary}, every sample equal to its file, as conflux data pack printed"


def idx(path, dims):
    with gzip.open(path, "rb") as fh:
        data = fh.read()
    header = 4 + 4 * dims  # magic, then one big-endian int32 per dimension
    shape = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims))
    return np.frombuffer(data, np.uint8, offset=header).reshape(shape)


def check_converted(args, p):
    files = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
             "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}
    with open(args.info) as r:
        info = r.read()
    with h5py.File(args.file, "r") as f:
        a = f.attrs
        shape = (int(a["channels"]), int(a["height"]), int(a["width"]))
        for split, (images_file, labels_file) in files.items():
            images, labels = f[split]["images"], f[split]["labels"]
            n = images.shape[0]
            line = (f"{a['name']} {split}: {n} samples of {'x'.join(map(str, shape))}, "
                    f"{int(a['num_classes'])} classes")
            p.expect(line in info, f"h5py: '{line}' not in conflux data info's output")
            p.expect(kind(images) == "uint8" and images.shape == (n,) + shape and
                     kind(labels) == "uint8" and labels.shape == (n,),
                     f"/{split}: images {kind(images)} {images.shape}, labels {kind(labels)} {labels.shape}")
            want = idx(os.path.join(args.source, images_file), 3)
            p.expect(np.array_equal(images[()].reshape(want.shape), want), f"/{split}/images != {images_file}")
            want = idx(os.path.join(args.source, labels_file), 1)
            p.expect(np.array_equal(labels[()], want), f"/{split}/labels != {labels_file}")
            sources = zip(strings(f[split].attrs["source_files"]), strings(f[split].attrs["source_sha256"]))
            for name, sha in sources:
                with open(os.path.join(args.source, name), "rb") as fh:
                    p.expect(hashlib.sha256(fh.read()).hexdigest() == sha, f"{name}: SHA-256 not {sha}")
                p.expect(f"  {sha}  {name}" in info, f"conflux data info does not list {sha}  {name}")
        p.expect(strings(a["class_names"]) == [str(i) for i in range(10)], f"class_names {a['class_names']}")
        return (f"converted {a['name']}: {f['train/images'].shape[0]} + {f['test/images'].shape[0]} "
                f"samples of {shape}, every pixel and label equal to the idx files, as data info shows")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["checkpoint", "pack", "converted"])
    parser.add_argument("file")
    parser.add_argument("--inspect")
    parser.add_argument("--model")
    parser.add_argument("--digest")
    parser.add_argument("--root")
    parser.add_argument("--summary")
    parser.add_argument("--info")
    parser.add_argument("--source")
    args = parser.parse_args()
    p = Problems()
    check = {"checkpoint": check_checkpoint, "pack": check_pack, "converted": check_converted}[args.what]
    try:
        done = check(args, p)
    except (OSError, KeyError, ValueError) as e:  # h5py's errors for a damaged or foreign file
        print(f"{args.file}: h5py cannot read it as documented: {type(e).__name__}: {e}")
        return 1
    if p:
        print("\n".join(p))
        return 1
    print(done)
    return 0


if __name__ == "__main__":
    sys.exit(main())
