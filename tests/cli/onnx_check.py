#!/usr/bin/python3
"""Independent check of a model written by `conflux export --format onnx`.

1. ONNX's own checker (onnx.checker.check_model with full_check: schema, types and shapes).
2. A numpy evaluation of the graph, written here from the ONNX operator specifications and
   sharing no code with conflux, on every ONNX test data set beside the model
   (test_data_set_N/input_0.pb), compared with the logits conflux stored (output_0.pb).

Usage: onnx_check.py MODEL.onnx [--tolerance T]
Exit: 0 all equal within tolerance; 1 an output differs; 2 bad file or an unsupported operator.
Run it with Debian's /usr/bin/python3 (python3-onnx, python3-numpy).
"""
import argparse
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def attributes(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def windows(x, kernel, strides):
    """[N, C, OH, OW, kh, kw] views of x [N, C, H, W]: every window a kernel covers."""
    view = np.lib.stride_tricks.sliding_window_view(x, tuple(kernel), axis=(2, 3))
    return view[:, :, :: strides[0], :: strides[1]]


def pad_hw(x, pads, value):
    top, left, bottom, right = pads
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def conv(x, w, b, a):
    if a.get("group", 1) != 1 or list(a.get("dilations", [1, 1])) != [1, 1]:
        raise ValueError("Conv: only group 1 and dilation 1 are implemented here")
    kernel = list(a.get("kernel_shape", w.shape[2:]))
    x = pad_hw(x, list(a.get("pads", [0, 0, 0, 0])), 0.0)
    y = np.einsum("nchwij,ocij->nohw", windows(x, kernel, list(a.get("strides", [1, 1]))), w)
    return y + b[None, :, None, None]


def max_pool(x, a):
    if a.get("ceil_mode", 0) != 0 or list(a.get("dilations", [1, 1])) != [1, 1]:
        raise ValueError("MaxPool: only floor mode and dilation 1 are implemented here")
    kernel = list(a["kernel_shape"])
    x = pad_hw(x, list(a.get("pads", [0, 0, 0, 0])), -np.inf)
    return windows(x, kernel, list(a.get("strides", [1, 1]))).max(axis=(4, 5))


def average_pool(x, a):
    if a.get("ceil_mode", 0) != 0 or any(a.get("pads", [0, 0, 0, 0])):
        raise ValueError("AveragePool: only floor mode without padding is implemented here")
    return windows(x, list(a["kernel_shape"]), list(a.get("strides", [1, 1]))).mean(axis=(4, 5))


def gemm(x, w, b, a):
    x = x.T if a.get("transA", 0) else x
    w = w.T if a.get("transB", 0) else w
    return a.get("alpha", 1.0) * (x @ w) + a.get("beta", 1.0) * b


def run_node(node, values):
    a = attributes(node)
    ins = [values[name] for name in node.input]
    if node.op_type == "Conv":
        return conv(ins[0], ins[1], ins[2], a)
    if node.op_type == "MaxPool":
        return max_pool(ins[0], a)
    if node.op_type == "AveragePool":
        return average_pool(ins[0], a)
    if node.op_type == "GlobalAveragePool":
        return ins[0].mean(axis=(2, 3), keepdims=True)
    if node.op_type == "Gemm":
        return gemm(ins[0], ins[1], ins[2], a)
    if node.op_type == "BatchNormalization":  # inference form, per channel (axis 1)
        x, scale, bias, mean, var = ins
        shape = (1, -1) + (1,) * (x.ndim - 2)
        eps = a.get("epsilon", 1e-5)
        return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * \
            scale.reshape(shape) + bias.reshape(shape)
    if node.op_type == "Sum":
        return sum(ins[1:], ins[0])
    if node.op_type == "Concat":
        return np.concatenate(ins, axis=a["axis"])
    if node.op_type == "Identity":
        return ins[0]
    if node.op_type == "Relu":
        return np.maximum(ins[0], 0.0)
    if node.op_type == "Flatten":
        axis = a.get("axis", 1)
        return ins[0].reshape(int(np.prod(ins[0].shape[:axis])), -1)
    raise ValueError(f"operator {node.op_type} is not implemented here")


def evaluate(model, inputs):
    """The graph's outputs for `inputs` (name -> array), in float64."""
    values = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    values.update({k: v.astype(np.float64) for k, v in inputs.items()})
    for node in model.graph.node:  # ONNX requires nodes in topological order
        values[node.output[0]] = run_node(node, values)
    return [values[o.name] for o in model.graph.output]


def read_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return tensor.name, numpy_helper.to_array(tensor)


def check_data_set(model, directory, tolerance):
    name, images = read_tensor(os.path.join(directory, "input_0.pb"))
    _, expected = read_tensor(os.path.join(directory, "output_0.pb"))
    (got,) = evaluate(model, {name: images})
    if got.shape != expected.shape:
        print(f"{directory}: output shape {got.shape}, conflux's {expected.shape}")
        return False
    scale = max(1.0, float(np.abs(expected).max()))
    worst = float(np.abs(got - expected).max())
    same_class = int((got.argmax(axis=1) == expected.argmax(axis=1)).sum())
    print(f"{os.path.basename(directory)}: {images.shape[0]} images {list(images.shape)}, "
          f"max |numpy - conflux| = {worst:.3g} (tolerance {tolerance * scale:.3g}), "
          f"same class {same_class}/{images.shape[0]}")
    return worst <= tolerance * scale and same_class == images.shape[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--tolerance", type=float, default=1e-4,
                        help="largest difference, relative to the largest |logit| (default 1e-4)")
    args = parser.parse_args()
    try:
        model = onnx.load(args.model)
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # the checker's own error types vary between ONNX versions
        print(f"{args.model}: rejected by ONNX: {e}", file=sys.stderr)
        return 2
    opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    print(f"{args.model}: ONNX checker ok (IR {model.ir_version}, opsets {opsets}), "
          f"{len(model.graph.node)} nodes: {' '.join(n.op_type for n in model.graph.node)}")
    sets = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(args.model)),
                                         "test_data_set_*")))
    if not sets:
        print("no test_data_set_* beside the model", file=sys.stderr)
        return 2
    try:
        results = [check_data_set(model, d, args.tolerance) for d in sets]
    except ValueError as e:
        print(f"{args.model}: {e}", file=sys.stderr)
        return 2
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
