#!/usr/bin/python3
"""Loads the weights of a conflux run (model.h5 + config.toml) into an equivalent PyTorch module.

Module use:  model = load_model("RUN/model.h5", "RUN/config.toml")  # in eval mode
CLI:         /usr/bin/python3 tools/conflux_to_torch.py RUN_DIR [--output model.pt]
                 [--torchscript model.ts] [--eval DATA_DIR [--limit N]]

The module holds one submodule per [[model.layers]] entry of the (resolved, blocks expanded)
config, named by its index, so conflux's tensor "layer{i}.{type}.weight" is the module's
"{i}.weight" (batchnorm's running_mean/running_var too). A straight list of layers becomes an
nn.Sequential; a graph (layers naming their `inputs`, add, concat) a torch.fx.GraphModule whose
forward() runs the layers in conflux's execution order (src/model/graph.cpp: inputs first,
ties by list order; the last layer is the output). Both script with torch.jit.script.
build_module(config) gives the same module with fresh weights, for training in PyTorch.
Every tensor of the file must match the shape the config implies and every one the config
implies must be in the file; the "digest" attribute (SHA-256 of all parameters' float32 bytes
in layer order, then all buffers') is verified. With --eval the test split of a built-in
dataset (mnist, fashion-mnist, cifar10) is read from its original files, transformed as
conflux's evaluation transform does, and scored like `conflux eval`. Errors in the inputs exit
2 with a message naming the file and the tensor/key/layer.
Needs numpy, h5py and torch (Debian: python3-numpy python3-h5py python3-torch).
"""

import argparse
import gzip
import hashlib
import math
import pathlib
import re
import sys
import tomllib
import warnings

import h5py
import numpy as np
import torch
from torch import fx, nn

# Image shapes [C, H, W] of the built-in datasets (conflux's data catalog).
BUILTIN_SHAPES = {"mnist": (1, 28, 28), "fashion-mnist": (1, 28, 28), "cifar10": (3, 32, 32)}
# Directory under the data directory, and test files, of each built-in dataset.
BUILTIN_DIRS = {"mnist": "mnist", "fashion-mnist": "fashion-mnist", "cifar10": "cifar-10"}
IDX_TEST_FILES = ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
CIFAR_TEST_FILE = "test_batch.bin"
EVAL_BATCH = 500  # as conflux eval; only memory depends on it


# Index of the model's input among a layer's inputs (conflux's kModelInput), and its name.
MODEL_INPUT = -1
INPUT_NAME = "input"
# Each layer type's keys with conflux's defaults (docs/config.md, model layers).
LAYER_DEFAULTS = {
    "linear": {}, "conv2d": {"kernel": 3, "stride": 1, "padding": 0},
    "maxpool": {"kernel": 2, "stride": 0, "padding": 0}, "avgpool": {"kernel": 2, "stride": 0},
    "batchnorm": {"momentum": 0.1, "eps": 1e-5}, "dropout": {"rate": 0.5},
    "relu": {}, "flatten": {}, "globalavgpool": {}, "add": {}, "concat": {},
}
MERGES = ("add", "concat")  # the layers of two or more inputs


class InputError(Exception):
    """Bad input (file, config, shapes): the CLI exits 2 with the message."""


class GlobalAvgPool(nn.Module):
    """conflux's globalavgpool: [N, C, H, W] -> [N, C], the mean over each channel's pixels."""

    def forward(self, x):
        return x.mean(dim=(2, 3))


def read_config(config_toml):
    """The parsed TOML of a conflux config (a run's resolved config.toml is complete)."""
    try:
        with open(config_toml, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise InputError(f"{config_toml}: cannot read the config: {e}") from e


def layer_specs(config, where):
    """[(type, keys)] of [[model.layers]] with conflux's defaults filled in."""
    layers = config.get("model", {}).get("layers")
    if not layers:
        raise InputError(f"{where}: no [[model.layers]]")
    specs = []
    for i, layer in enumerate(layers):
        kind = layer.get("type")
        if kind not in LAYER_DEFAULTS:
            hint = " (give the run's resolved config.toml: blocks expanded)" if kind == "block" else ""
            raise InputError(f"{where}: layer {i} has unknown type {kind!r}{hint}")
        if kind in ("linear", "conv2d") and "out" not in layer:
            raise InputError(f"{where}: layer {i} ({kind}) needs 'out'")
        spec = dict(LAYER_DEFAULTS[kind])
        spec.update({k: v for k, v in layer.items() if k != "type"})
        if kind in ("maxpool", "avgpool") and spec["stride"] == 0:
            spec["stride"] = spec["kernel"]  # "same as the window"
        if kind == "avgpool" and spec.get("padding", 0) != 0:
            raise InputError(f"{where}: layer {i} ({kind}): padding is not supported")
        specs.append((kind, spec))
    return specs


def input_shape(config, where, given=None):
    """The model's input [C, H, W]: the dataset's images after the evaluation transform."""
    dataset = config.get("data", {}).get("dataset")
    if given is not None:
        shape = tuple(given)
    elif dataset in BUILTIN_SHAPES:
        shape = BUILTIN_SHAPES[dataset]
    else:
        raise InputError(
            f"{where}: data.dataset = {dataset!r} is not built in; give --input-shape C,H,W")
    transform = config.get("transform", {})
    side = transform.get("resized_crop", 0) or transform.get("crop", 0)
    return (shape[0], side, side) if side > 0 else shape


def layer_label(specs, i):
    """conflux's name for layer i in errors: "layer 5 (batchnorm 'stage1.0.bn2')"."""
    kind, spec = specs[i]
    return f"layer {i} ({kind}" + (f" '{spec['name']}')" if spec.get("name") else ")")


def resolve_inputs(specs, where):
    """Each layer's inputs by index (MODEL_INPUT for "input"): its named `inputs`, else the
    previous layer's output (the model's input for the first layer)."""
    names = {}
    for i, (_, spec) in enumerate(specs):
        name = spec.get("name")
        if name == INPUT_NAME:
            raise InputError(f"{where}: {layer_label(specs, i)}: the name 'input' is reserved "
                             "for the model's input")
        if name and name in names:
            raise InputError(f"{where}: {layer_label(specs, i)}: the name {name!r} is already "
                             f"taken by {layer_label(specs, names[name])}")
        if name:
            names[name] = i
    inputs = []
    for i, (_, spec) in enumerate(specs):
        given = spec.get("inputs") or []
        if not given:
            inputs.append([i - 1 if i > 0 else MODEL_INPUT])
            continue
        if any(n != INPUT_NAME and names.get(n, i) == i for n in given):
            bad = next(n for n in given if n != INPUT_NAME and names.get(n, i) == i)
            raise InputError(f"{where}: {layer_label(specs, i)}: input {bad!r} is not the name "
                             "of another layer")
        inputs.append([MODEL_INPUT if n == INPUT_NAME else names[n] for n in given])
    return inputs


def execution_order(specs, inputs, where):
    """conflux's order (src/model/graph.cpp): repeatedly the first layer in list order whose
    inputs are all computed."""
    done, order = set(), []
    while len(order) < len(specs):
        ready = [i for i in range(len(specs)) if i not in done
                 and all(j == MODEL_INPUT or j in done for j in inputs[i])]
        if not ready:
            stuck = ", ".join(layer_label(specs, i) for i in range(len(specs)) if i not in done)
            raise InputError(f"{where}: the model's layers form a cycle (among {stuck})")
        done.add(ready[0])
        order.append(ready[0])
    used = {j for ins in inputs for j in ins}
    last = len(specs) - 1
    if last in used:
        raise InputError(f"{where}: {layer_label(specs, last)}: the model's output (the last "
                         "layer) cannot be the input of another layer")
    for i in range(last):
        if i not in used:
            raise InputError(f"{where}: {layer_label(specs, i)}: no layer takes its output (the "
                             "model's output is the last layer)")
    return order


def wire(specs, where):
    """(inputs, order, chain): resolve_inputs, execution_order, and whether the layers form a
    straight list (each takes the previous one's output)."""
    inputs = resolve_inputs(specs, where)
    order = execution_order(specs, inputs, where)
    chain = all(ins == [i - 1 if i > 0 else MODEL_INPUT] for i, ins in enumerate(inputs))
    return inputs, order, chain


def merge_shape(kind, shapes):
    """The output shape of add or concat (along the first sample dimension) on `shapes`."""
    text = ", ".join(str(list(s)) for s in shapes)
    if len(shapes) < 2:
        raise InputError(f"takes two or more inputs, got {len(shapes)}")
    if kind == "add":
        if any(s != shapes[0] for s in shapes):
            raise InputError(f"adds inputs of different shapes: {text}")
        return shapes[0]
    if any(len(s) != len(shapes[0]) or s[1:] != shapes[0][1:] for s in shapes):
        raise InputError(f"concatenates inputs whose shapes differ beyond the channels: {text}")
    return (sum(s[0] for s in shapes),) + tuple(shapes[0][1:])


def layer_shapes(kind, spec, shapes):
    """(output shape, {parameter: shape}, {buffer: shape}) of one layer on inputs `shapes`."""
    if kind in MERGES:
        return merge_shape(kind, shapes), {}, {}
    if len(shapes) != 1:
        raise InputError(f"takes 1 input(s), got {len(shapes)}")
    shape = tuple(shapes[0])
    image = f"expects an image [C,H,W] but gets {list(shape)}"
    if kind in ("conv2d", "maxpool", "avgpool"):
        if len(shape) != 3:
            raise InputError(image)
        c, h, w = shape
        k, s, p = spec["kernel"], spec["stride"], spec.get("padding", 0)
        if h + 2 * p < k or w + 2 * p < k:
            raise InputError(f"window {k} does not fit {list(shape)}")
        out_c = spec["out"] if kind == "conv2d" else c
        out = (out_c, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1)
        if kind == "conv2d":
            return out, {"weight": (out_c, c, k, k), "bias": (out_c,)}, {}
        return out, {}, {}
    if kind == "linear":
        if len(shape) != 1:
            raise InputError(f"expects features but gets {list(shape)}; add a flatten layer")
        return (spec["out"],), {"weight": (spec["out"], shape[0]), "bias": (spec["out"],)}, {}
    if kind == "batchnorm":
        if len(shape) not in (1, 3):
            raise InputError(f"expects [C,H,W] or [F] but gets {list(shape)}")
        per_channel = (shape[0],)
        return shape, {"weight": per_channel, "bias": per_channel}, \
            {"running_mean": per_channel, "running_var": per_channel}
    if kind == "flatten":
        return (math.prod(shape),), {}, {}
    if kind == "globalavgpool":
        if len(shape) != 3:
            raise InputError(image)
        return (shape[0],), {}, {}
    return shape, {}, {}  # relu, dropout


def expected_tensors(specs, wiring, shape):
    """({name: shape} of the tensors conflux lays out for `specs` on inputs of `shape`, in its
    state order (src/model/model.cpp: "layer{i}.{type}.{name}", the parameters layer by layer,
    then the buffers), each layer's input shapes, and the output shape)."""
    inputs, order, _ = wiring
    outputs, in_shapes = [None] * len(specs), [None] * len(specs)
    params, buffers = [{} for _ in specs], [{} for _ in specs]
    for i in order:
        kind, spec = specs[i]
        in_shapes[i] = [tuple(shape) if j == MODEL_INPUT else outputs[j] for j in inputs[i]]
        try:
            outputs[i], params[i], buffers[i] = layer_shapes(kind, spec, in_shapes[i])
        except InputError as e:
            raise InputError(f"{layer_label(specs, i)}: {e}") from e
    tensors = {}
    for layer_tensors in (params, buffers):
        for i, named in enumerate(layer_tensors):
            tensors.update({f"layer{i}.{specs[i][0]}.{k}": v for k, v in named.items()})
    return tensors, in_shapes, outputs[-1]


def layer_module(kind, spec, shape):
    """The torch module of one (non-merge) layer whose input has sample shape `shape`."""
    if kind == "linear":
        return nn.Linear(shape[0], spec["out"])
    if kind == "conv2d":
        return nn.Conv2d(shape[0], spec["out"], spec["kernel"], stride=spec["stride"],
                         padding=spec["padding"])
    if kind in ("maxpool", "avgpool"):
        if kind == "maxpool":  # conflux pads with -inf, as PyTorch does
            return nn.MaxPool2d(spec["kernel"], stride=spec["stride"], padding=spec["padding"])
        return nn.AvgPool2d(spec["kernel"], stride=spec["stride"])
    if kind == "batchnorm":  # momentum as PyTorch's: the weight of the batch
        norm = nn.BatchNorm2d if len(shape) == 3 else nn.BatchNorm1d
        return norm(shape[0], eps=spec["eps"], momentum=spec["momentum"])
    if kind == "dropout":
        return nn.Dropout(p=spec["rate"])
    if kind == "globalavgpool":
        return GlobalAvgPool()
    if kind == "relu":
        return nn.ReLU()
    return nn.Flatten()  # [N, C, H, W] -> [N, C*H*W], C order as conflux


def graph_module(specs, wiring, modules):
    """A torch.fx.GraphModule running `modules` (submodule "i" is layer i) in conflux's
    execution order; add sums its inputs in order, concat joins them along dim 1."""
    inputs, order, _ = wiring
    root = nn.Module()
    for i, module in enumerate(modules):
        if module is not None:
            root.add_module(str(i), module)
    graph = fx.Graph()
    values = {MODEL_INPUT: graph.placeholder("x")}
    for i in order:
        kind, spec = specs[i]
        args = [values[j] for j in inputs[i]]
        # Node names (the generated code's variables) carry conflux's layer names.
        label = spec.get("name") or kind
        name = re.sub(r"\W", "_", label if label == f"layer{i}" else f"layer{i}_{label}")
        if kind == "add":
            value = args[0]
            for arg in args[1:]:
                value = graph.create_node("call_function", torch.add, (value, arg), name=name)
        elif kind == "concat":
            value = graph.create_node("call_function", torch.cat, (args,), {"dim": 1}, name=name)
        else:
            value = graph.create_node("call_module", str(i), (args[0],), name=name)
        values[i] = value
    graph.output(values[len(specs) - 1])
    return fx.GraphModule(root, graph, class_name="ConfluxGraph")


def make_module(specs, wiring, in_shapes):
    """The module of `specs` with PyTorch's initial weights: an nn.Sequential for a straight
    list, else graph_module; layer i is submodule "i" (so "{i}.weight" is "layer{i}...")."""
    modules = [None if kind in MERGES else layer_module(kind, spec, in_shapes[i][0])
               for i, (kind, spec) in enumerate(specs)]
    if wiring[2]:
        return nn.Sequential(*modules)
    return graph_module(specs, wiring, modules)


def analyse(config, where, shape=None):
    """(specs, wiring, expected tensors, input shapes per layer, model input and output shapes)
    of a conflux config; InputError naming `where` if it does not describe a valid model."""
    specs = layer_specs(config, where)
    wiring = wire(specs, where)
    shape = input_shape(config, where, shape)
    try:
        expected, in_shapes, out_shape = expected_tensors(specs, wiring, shape)
    except InputError as e:
        raise InputError(f"{where}: {e} (model input {list(shape)})") from e
    return specs, wiring, expected, in_shapes, shape, out_shape


def build_module(config, where="config", shape=None):
    """The module of `config` (a parsed resolved config.toml) with fresh PyTorch-initialised
    weights, in training mode: the same architecture as conflux trains."""
    specs, wiring, _, in_shapes, _, _ = analyse(config, where, shape)
    return make_module(specs, wiring, in_shapes)


def read_weights(model_h5, expected):
    """The file's tensors as float32 arrays, checked name by name and shape by shape against
    `expected`, and against the file's digest."""
    try:
        f = h5py.File(model_h5, "r")
    except OSError as e:
        raise InputError(f"{model_h5}: cannot open the model file: {e}") from e
    with f:
        if "params" not in f or not isinstance(f["params"], h5py.Group):
            raise InputError(f"{model_h5}: no /params group (not a conflux model.h5?)")
        params = f["params"]
        weights = {}
        for name, shape in expected.items():
            if name not in params:
                raise InputError(f"{model_h5}: parameter {name} is missing "
                                 "(the config has a different architecture)")
            got = params[name].shape
            if tuple(got) != shape:
                raise InputError(f"{model_h5}: parameter {name} has shape {list(got)} but the "
                                 f"config implies {list(shape)}")
            weights[name] = np.asarray(params[name][()], dtype="<f4")
        unused = sorted(set(params.keys()) - set(expected))
        if unused:
            raise InputError(f"{model_h5}: parameter(s) {', '.join(unused)} not in the config's "
                             "model (the config has a different architecture)")
        stored = f.attrs.get("digest")
    if stored is not None:
        stored = stored.decode() if isinstance(stored, bytes) else str(stored)
        sha = hashlib.sha256()
        for array in weights.values():  # expected's order is conflux's buffer order
            sha.update(array.tobytes())
        if sha.hexdigest() != stored:
            raise InputError(f"{model_h5}: the weights do not match the stored digest "
                             f"{stored} (computed {sha.hexdigest()}; corrupt file?)")
    return weights, stored


def load_model(model_h5, config_toml, shape=None, report=None):
    """A torch module equivalent to the conflux model of `config_toml` (make_module), holding
    the weights and running statistics of `model_h5`, in eval mode; InputError if they do not
    fit. `report` (a dict) receives the digest, the input shape and the tensor count."""
    config = read_config(config_toml)
    specs, wiring, expected, in_shapes, shape, out_shape = analyse(config, config_toml, shape)
    weights, digest = read_weights(model_h5, expected)
    module = make_module(specs, wiring, in_shapes)
    state = {}
    for name, array in weights.items():
        i, kind, which = name.split(".")
        i = i.removeprefix("layer")
        state[f"{i}.{which}"] = torch.from_numpy(array.copy())
        if kind == "batchnorm" and which == "running_var":  # PyTorch's count, unused in eval
            state[f"{i}.num_batches_tracked"] = torch.tensor(0)
    module.load_state_dict(state, strict=True)
    module.eval()
    if report is not None:
        report.update(digest=digest, input_shape=shape, output_shape=out_shape,
                      tensors=len(weights), config=config)
    return module


# --- evaluation on a built-in dataset's test split -----------------------------------------


def read_maybe_gzip(path):
    """The bytes of `path`, gunzipped when it is gzip (conflux detects it the same way)."""
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def existing(directory, name):
    """`directory/name`, or the same name without .gz; InputError if neither exists."""
    for candidate in (directory / name, directory / name.removesuffix(".gz")):
        if candidate.is_file():
            return candidate
    raise InputError(f"{directory / name}: test file not found")


def read_idx_test(directory):
    """(images uint8 [N,1,28,28], labels int64 [N]) of an IDX test split."""
    images = read_maybe_gzip(existing(directory, IDX_TEST_FILES[0]))
    labels = read_maybe_gzip(existing(directory, IDX_TEST_FILES[1]))
    if int.from_bytes(images[:4], "big") != 0x803 or int.from_bytes(labels[:4], "big") != 0x801:
        raise InputError(f"{directory}: bad IDX magic numbers")
    n, h, w = (int.from_bytes(images[4 + 4 * i:8 + 4 * i], "big") for i in range(3))
    pixels = np.frombuffer(images, np.uint8, n * h * w, 16).reshape(n, 1, h, w)
    return pixels, np.frombuffer(labels, np.uint8, n, 8).astype(np.int64)


def read_cifar_test(directory):
    """(images uint8 [N,3,32,32], labels int64 [N]) of CIFAR-10's binary test batch."""
    raw = np.fromfile(existing(directory, CIFAR_TEST_FILE), np.uint8)
    if raw.size % 3073 != 0:
        raise InputError(f"{directory / CIFAR_TEST_FILE}: not whole 3073-byte records")
    records = raw.reshape(-1, 3073)
    return records[:, 1:].reshape(-1, 3, 32, 32), records[:, 0].astype(np.int64)


def eval_inputs(pixels, transform):
    """conflux's evaluation transform (src/data/transform, SampleTransform::eval) for images
    of a fixed size: centre crop of transform.crop (offsets (H - crop) / 2), then, in float32,
    pixel * (1 / (255 * std)) + (-mean / std) per channel."""
    if transform.get("resized_crop", 0) > 0:
        raise InputError("transform.resized_crop: the bilinear evaluation resize is not "
                         "reproduced here; only crop/pad/flip/mean/std configs are supported")
    crop = transform.get("crop", 0)
    n, c, h, w = pixels.shape
    if crop > 0:
        # C++ integer division truncates towards 0 (a crop larger than the image pads).
        top, left = int((h - crop) / 2), int((w - crop) / 2)
        window = pixels[:, :, max(top, 0):top + crop, max(left, 0):left + crop]
        padded = np.zeros((n, c, crop, crop), np.uint8)
        padded[:, :, max(-top, 0):max(-top, 0) + window.shape[2],
               max(-left, 0):max(-left, 0) + window.shape[3]] = window
        pixels = padded
    mean = np.broadcast_to(np.asarray(transform.get("mean", [0.0]), np.float32), (c,))
    std = np.broadcast_to(np.asarray(transform.get("std", [1.0]), np.float32), (c,))
    scale = np.float32(1) / (np.float32(255) * std)
    shift = -mean / std
    out = pixels.astype(np.float32) * scale[None, :, None, None]
    return out + shift[None, :, None, None]


def evaluate(module, config, data_dir, limit=0):
    """(samples, correct, mean loss) of `module` on the first `limit` (0 = all) test samples."""
    dataset = config.get("data", {}).get("dataset")
    if dataset not in BUILTIN_DIRS:
        raise InputError(f"--eval: data.dataset = {dataset!r}; only {', '.join(BUILTIN_DIRS)} "
                         "are read here")
    directory = pathlib.Path(data_dir) / BUILTIN_DIRS[dataset]
    pixels, labels = (read_cifar_test if dataset == "cifar10" else read_idx_test)(directory)
    if limit > 0:
        pixels, labels = pixels[:limit], labels[:limit]
    transform = config.get("transform", {})
    correct, loss_sum = 0, 0.0
    with torch.no_grad():
        for lo in range(0, len(labels), EVAL_BATCH):
            x = torch.from_numpy(eval_inputs(pixels[lo:lo + EVAL_BATCH], transform))
            logits = module(x).numpy()
            y = labels[lo:lo + EVAL_BATCH]
            # Like conflux's loss: float32 logits, log-sum-exp in double, first maximum wins.
            correct += int((np.argmax(logits, axis=1) == y).sum())
            loss_sum += float(nn.functional.cross_entropy(
                torch.from_numpy(logits.astype(np.float64)), torch.from_numpy(y),
                reduction="sum"))
    return len(labels), correct, loss_sum / max(1, len(labels))


# --- command line --------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", nargs="?", help="run directory holding model.h5 and config.toml")
    p.add_argument("--model", help="model file (default RUN_DIR/model.h5)")
    p.add_argument("--config", help="config (default RUN_DIR/config.toml)")
    p.add_argument("--input-shape", help="C,H,W of the images, for datasets not built in")
    p.add_argument("--output", help="save the state_dict here (torch.save)")
    p.add_argument("--torchscript", help="save a TorchScript module here")
    p.add_argument("--eval", metavar="DATA_DIR",
                   help="evaluate on the test split of the config's built-in dataset")
    p.add_argument("--limit", type=int, default=0, help="--eval: first N test samples (0 = all)")
    args = p.parse_args(argv)
    if args.model is None or args.config is None:
        if args.run_dir is None:
            p.error("give RUN_DIR, or --model and --config")
        run = pathlib.Path(args.run_dir)
        args.model = args.model or str(run / "model.h5")
        args.config = args.config or str(run / "config.toml")
    if args.input_shape is not None:
        try:
            args.input_shape = [int(v) for v in args.input_shape.split(",")]
            assert len(args.input_shape) == 3 and min(args.input_shape) > 0
        except (ValueError, AssertionError):
            p.error(f"--input-shape {args.input_shape}: expected C,H,W (positive integers)")
    if args.limit < 0:
        p.error("--limit must be >= 0")
    return args


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(1)
    info = {}
    module = load_model(args.model, args.config, args.input_shape, info)
    params = sum(t.numel() for t in module.state_dict().values())
    print(f"{args.model}: {info['tensors']} tensors, {params} parameters, input "
          f"{list(info['input_shape'])} -> output {list(info['output_shape'])}, digest "
          f"{info['digest'] or '(none stored)'}" + (" verified" if info["digest"] else ""))
    print(module)
    if args.output:
        torch.save(module.state_dict(), args.output)
        print(f"state_dict saved to {args.output}")
    if args.torchscript:
        with warnings.catch_warnings():  # torch.fx's GraphModule trips a harmless one
            warnings.filterwarnings("ignore", "The TorchScript type system")
            torch.jit.script(module).save(args.torchscript)
        print(f"TorchScript module saved to {args.torchscript}")
    if args.eval:
        n, correct, loss = evaluate(module, info["config"], args.eval, args.limit)
        # The line of conflux eval (src/cli), then the unrounded figures.
        print(f"torch eval: test split, {n} samples: loss {loss:.4f}, accuracy "
              f"{100.0 * correct / max(1, n):.2f}%")
        print(f"torch eval detail: {correct} correct of {n}, mean loss {loss:.12g}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as e:
        print(f"conflux_to_torch: error: {e}", file=sys.stderr)
        sys.exit(2)
