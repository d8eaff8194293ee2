"""A model written by `conflux export --format onnx`, run by ONNX Runtime, against conflux's logits.

ONNX Runtime (CPU execution provider, its default graph optimisations) loads MODEL.onnx and runs
it on the images of every ONNX test data set beside it (test_data_set_N/input_0.pb: real test
images, normalised as conflux's evaluation does); the outputs must equal the logits conflux's
own forward pass computed for them (output_0.pb, written by `conflux export`) within TOLERANCE
relative to the largest |logit| (at least 1), and give the same class for every image. The .pb
files are read with onnx's numpy_helper; onnx plays no part in running the model.

With --labels and --eval, ONNX Runtime's logits are also scored against the dataset's own label
file (read here: MNIST's idx or CIFAR-10's binary batch) and must give the loss and accuracy
that `conflux eval` printed for the same first N test images.

Usage: ort_check.py MODEL.onnx [--tolerance T] [--labels mnist|cifar10:FILE --eval "LINE"]
Exit: 0 equal within tolerance; 1 an output differs; 2 ONNX Runtime refuses the model or a
test data set is missing. Run it with the test-deps virtual environment.
"""
import argparse
import glob
import gzip
import os
import re
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def read_tensor(path):
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return numpy_helper.to_array(tensor)


def read_labels(spec, count):
    """The first `count` labels of a dataset's original test label file."""
    kind, path = spec.split(":", 1)
    if kind == "mnist":  # idx1: magic, count (big-endian int32), then one byte per label
        with gzip.open(path, "rb") as f:
            data = f.read()
        return np.frombuffer(data, np.uint8, count, offset=8).astype(np.int64)
    if kind == "cifar10":  # records of 1 label byte + 3072 pixel bytes
        data = np.fromfile(path, np.uint8, count * 3073).reshape(count, 3073)
        return data[:, 0].astype(np.int64)
    raise ValueError(f"--labels: unknown kind {kind!r} (mnist or cifar10)")


def check_eval(logits, labels, line):
    """ONNX Runtime's cross-entropy and accuracy against `conflux eval`'s printed ones."""
    m = re.search(r"(\d+) samples: loss ([0-9.]+), accuracy ([0-9.]+)%", line)
    if not m or int(m.group(1)) != len(labels):
        print(f"--eval: '{line}' is not conflux eval's line for {len(labels)} samples")
        return False
    z = logits.astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    loss = float((np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(labels)), labels]).mean())
    accuracy = 100.0 * float((logits.argmax(axis=1) == labels).mean())
    print(f"onnxruntime on the dataset's labels: loss {loss:.4f}, accuracy {accuracy:.2f}%; "
          f"conflux eval: loss {m.group(2)}, accuracy {m.group(3)}%")
    return f"{accuracy:.2f}" == m.group(3) and abs(loss - float(m.group(2))) <= 6e-5


def check_data_set(session, directory, tolerance):
    images = read_tensor(os.path.join(directory, "input_0.pb"))
    expected = read_tensor(os.path.join(directory, "output_0.pb"))
    (got,) = session.run(None, {session.get_inputs()[0].name: images})
    if got.shape != expected.shape:
        print(f"{directory}: ONNX Runtime's output shape {got.shape}, conflux's {expected.shape}")
        return False
    limit = tolerance * max(1.0, float(np.abs(expected).max()))
    worst = float(np.abs(got.astype(np.float64) - expected).max())
    same = int((got.argmax(axis=1) == expected.argmax(axis=1)).sum())
    print(f"{os.path.basename(directory)}: {images.shape[0]} images {list(images.shape)}, "
          f"max |onnxruntime - conflux| = {worst:.3g} (limit {limit:.3g}), "
          f"same class {same}/{images.shape[0]}")
    return worst <= limit and same == images.shape[0], got


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--labels", help="mnist:T10K-LABELS.gz or cifar10:TEST_BATCH.bin")
    parser.add_argument("--eval", help="conflux eval's result line for the same test images")
    parser.add_argument("--tolerance", type=float, default=1e-4,
                        help="largest difference, relative to the largest |logit| (default 1e-4)")
    args = parser.parse_args()
    try:
        session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    except Exception as e:  # ONNX Runtime raises its own error types for a bad model
        print(f"{args.model}: ONNX Runtime refuses it: {e}", file=sys.stderr)
        return 2
    print(f"{args.model}: ONNX Runtime {ort.__version__} loaded it (input "
          f"{session.get_inputs()[0].name} {session.get_inputs()[0].shape})")
    sets = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(args.model)),
                                         "test_data_set_*")))
    if not sets:
        print("no test_data_set_* beside the model", file=sys.stderr)
        return 2
    results = [check_data_set(session, d, args.tolerance) for d in sets]
    good = all(r[0] for r in results)
    if args.labels:
        logits = results[0][1]
        good = check_eval(logits, read_labels(args.labels, len(logits)), args.eval or "") and good
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
