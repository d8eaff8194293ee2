"""A run's TensorBoard event files as TensorBoard itself reads them, against the run's jsonl files.

TensorBoard's own reader (tensorboard.backend.event_processing.event_accumulator, which checks
every record's CRC-32C and stops at the first damaged or truncated one) loads RUN_DIR/tensorboard
(or --events DIR). The check asserts that it sees exactly the scalars conflux reported:
  - the tags: the six step tags and the epoch tags of docs/watching.md, nothing else;
  - per step tag: the steps of steps.jsonl in order, each value equal to the steps.jsonl value
    rounded to float32 (the event's simple_value is a float32);
  - per epoch tag: one point per metrics.jsonl line, at the global step of that epoch's last
    report, with the metrics.jsonl value rounded to float32;
  - the file version record TensorBoard expects (brain.Event:2).

Usage: tensorboard_check.py RUN_DIR [--events DIR]
Exit: 0 all equal; 1 a difference (printed). Run it with the test-deps virtual environment.
"""
import argparse
import json
import os
import struct
import sys

from tensorboard.backend.event_processing import event_accumulator

# TensorBoard tag -> steps.jsonl key (src/train/tensorboard_recorder.cpp, docs/watching.md).
STEP_TAGS = {
    "train/loss": "loss",
    "train/accuracy": "accuracy",
    "train/learning_rate": "learning_rate",
    "throughput/samples_per_s": "samples_per_s",
    "input/data_wait_ms": "data_wait_ms",
    "input/offload_ratio": "offload_ratio",
}
# TensorBoard tag -> metrics.jsonl key.
EPOCH_TAGS = {
    "epoch/train_loss": "train_loss",
    "epoch/train_accuracy": "train_accuracy",
    "epoch/test_loss": "test_loss",
    "epoch/test_accuracy": "test_accuracy",
    "epoch/samples_per_s": "samples_per_s",
    "epoch/epoch": "epoch",
}


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def expected_scalars(run_dir):
    """tag -> [(step, float32 value)] from steps.jsonl and metrics.jsonl."""
    steps = read_jsonl(os.path.join(run_dir, "steps.jsonl"))
    metrics = read_jsonl(os.path.join(run_dir, "metrics.jsonl"))
    want = {tag: [(r["step"], f32(r[key])) for r in steps] for tag, key in STEP_TAGS.items()}
    # An epoch's scalars sit at the global step of its last report (epoch_step == steps_in_epoch).
    epoch_end = {r["epoch"]: r["step"] for r in steps if r["epoch_step"] == r["steps_in_epoch"]}
    for tag, key in EPOCH_TAGS.items():
        want[tag] = [(epoch_end[m["epoch"]], f32(m[key])) for m in metrics if key in m]
    return {tag: points for tag, points in want.items() if points}


def seen_scalars(events_dir):
    acc = event_accumulator.EventAccumulator(events_dir, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    got = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    return acc.file_version, got


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--events", help="the event files' directory (default RUN_DIR/tensorboard)")
    args = parser.parse_args()
    want = expected_scalars(args.run_dir)
    version, got = seen_scalars(args.events or os.path.join(args.run_dir, "tensorboard"))
    problems = []
    if version != 2.0:  # TensorBoard parses the record "brain.Event:2" into 2.0
        problems.append(f"file version {version!r}, want 2.0 (brain.Event:2)")
    if set(got) != set(want):
        problems.append(f"tags {sorted(got)}, want {sorted(want)}")
    for tag in sorted(set(got) & set(want)):
        if got[tag] != want[tag]:
            problems.append(f"{tag}: TensorBoard sees {len(got[tag])} points, "
                            f"first difference at {next_difference(got[tag], want[tag])}")
    if problems:
        print("\n".join(problems))
        return 1
    steps = len(want["train/loss"])
    epochs = len(want.get("epoch/epoch", []))
    print(f"TensorBoard reads {len(got)} tags: {steps} step reports and {epochs} epochs, "
          f"{sum(map(len, got.values()))} scalars, all equal to steps.jsonl / metrics.jsonl")
    return 0


def next_difference(got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"point {i}: (step, value) {g}, want {w}"
    return f"point {min(len(got), len(want))}: {len(got)} points, want {len(want)}"


if __name__ == "__main__":
    sys.exit(main())
