#!/usr/bin/python3
"""The standard-library half of benchmarks/gpu_input_pipeline.sh (docs/gpu-input-pipeline.md):
everything but PyTorch's own training loop (benchmarks/pytorch_gpu_input.py), so that it runs
with any python3 >= 3.11, also where torch is absent.

Subcommands:
  tile-cifar SRC DEST      DEST = SRC's whole 3073-byte CIFAR-10 records repeated up to the
                           10,000 of a data_batch_1.bin (make-images reads only whole batches)
  merge-parts DEST PART..  moves PART/train/<class>/<file> to DEST/train/<class>/p<k>-<file>
                           (the parts of make-images run in parallel, one folder each)
  fill-missing [options]   a row for each worker count a PyTorch process left without one
  conflux [options] -- CMD runs one conflux point (CMD: mpirun ... conflux train ...), stops it
                           once measured (SIGUSR1, which mpirun relays and conflux answers by
                           checkpointing and exiting 75), and appends its row to --json
  report --json F --out D  D/results.md, D/results.csv and, with matplotlib, D/samples_per_s.png

A row's figures are over its measured window, the steps after the warm-up: samples_per_s =
batch x steps / seconds; data_wait_ms the mean time a step waited for its batch; gpu_util_pct
the mean of nvidia-smi's utilization.gpu sampled every 0.2 s (gpu_vs_torch.UtilSampler);
cpu_cores the busy share of all CPUs in /proc/stat times their number (the whole machine:
trainer, workers, DataLoader processes, everything).
"""

import argparse
import csv
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gpu_vs_torch import UtilSampler  # noqa: E402  (one GPU sampler for both benchmarks)

CIFAR_RECORD = 3073
CIFAR_RECORDS = 10000
COLUMNS = ["model", "pipeline", "workers", "ratio", "status", "samples_per_s", "steps",
           "seconds", "data_wait_ms", "gpu_util_pct", "cpu_cores", "ratio_mean", "ratio_last",
           "message"]


def log(message):
    print(f"gpu_input: {message}", file=sys.stderr, flush=True)


def append_row(path, row):
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")
    brief = {k: row.get(k) for k in ("model", "pipeline", "workers", "ratio", "status",
                                      "samples_per_s", "data_wait_ms", "gpu_util_pct",
                                      "cpu_cores")}
    print(json.dumps(brief), flush=True)


# --- CPU use -------------------------------------------------------------------------------


def cpu_times():
    """(busy, total) jiffies of all CPUs from /proc/stat's first line; busy excludes idle and
    iowait."""
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


class CpuSampler:
    """/proc/stat every `period` seconds in a thread; cores(begin, end) is the number of busy
    CPUs averaged over the samples that bracket [begin, end] (time.monotonic())."""

    def __init__(self, period=0.2):
        self.period, self.samples = period, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), *cpu_times()))
            self._stop.wait(self.period)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
        self.samples.append((time.monotonic(), *cpu_times()))
        return self

    def cores(self, begin, end):
        before = [s for s in self.samples if s[0] <= begin]
        after = [s for s in self.samples if s[0] >= end]
        first = before[-1] if before else (self.samples[0] if self.samples else None)
        last = after[0] if after else (self.samples[-1] if self.samples else None)
        if first is None or last is None or last[2] <= first[2]:
            return None
        return round((last[1] - first[1]) / (last[2] - first[2]) * (os.cpu_count() or 1), 2)


# --- data set helpers ----------------------------------------------------------------------


def tile_cifar(src, dest):
    data = pathlib.Path(src).read_bytes()
    records = len(data) // CIFAR_RECORD
    if records == 0 or len(data) % CIFAR_RECORD:
        log(f"{src}: {len(data)} bytes is not a whole number (>= 1) of {CIFAR_RECORD}-byte "
            "CIFAR-10 records")
        sys.exit(2)
    whole, rest = divmod(CIFAR_RECORDS, records)
    pathlib.Path(dest).parent.mkdir(parents=True, exist_ok=True)
    with open(dest, "wb") as f:
        for _ in range(whole):
            f.write(data)
        f.write(data[:rest * CIFAR_RECORD])
    log(f"{dest}: {CIFAR_RECORDS} records, the {records} of {src} repeated")


def merge_parts(dest, parts):
    moved = 0
    for k, part in enumerate(parts):
        train = pathlib.Path(part) / "train"
        for cls in sorted(p for p in train.iterdir() if p.is_dir()):
            target = pathlib.Path(dest) / "train" / cls.name
            target.mkdir(parents=True, exist_ok=True)
            for f in cls.iterdir():
                f.rename(target / f"p{k:02d}-{f.name}")
                moved += 1
    log(f"{dest}: {moved} files from {len(parts)} parts")


# --- one conflux point ---------------------------------------------------------------------


def read_steps(path):
    rows = []
    try:
        text = pathlib.Path(path).read_text()
    except OSError:
        return rows
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a torn last line
    return rows


def first_seen(lines_at, count):
    """When the watched file first held at least `count` lines (monotonic time), or None."""
    return next((t for t, n in lines_at if n >= count), None)


def stop_group(proc, grace):
    """SIGUSR1 to the launcher (conflux checkpoints and exits 75), then SIGTERM and SIGKILL to
    its whole session after `grace` seconds each."""
    for sig, wait in ((signal.SIGUSR1, grace), (signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            if sig == signal.SIGUSR1:
                proc.send_signal(sig)
            else:
                os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            return proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return proc.wait()


def watch_run(proc, gpu, a):
    """Waits for the run to end (it runs a few steps more than --warmup + --steps), stopping it
    once --measure-s seconds were measured or at its limit; returns (exit
    code, why it was stopped or None, the steps reported before the stop or None). Steps after
    the stop signal are not measured: the signal reaches the workers too, which leave the data
    service, so the trainer's last steps build their own batches."""
    start = time.monotonic()
    while proc.poll() is None:
        time.sleep(0.1)
        lines = len(read_steps(a.steps_file))
        seen_warm = first_seen(gpu.lines_at, a.warmup)
        now = time.monotonic()
        why = None
        if seen_warm is not None and now - seen_warm >= a.measure_s \
                and lines - a.warmup >= a.min_steps:
            why = "measured"
        elif now - start >= a.limit_s:
            why = f"limit of {a.limit_s:.0f} s"
        if why:
            gpu.lines_at.append((now, lines))  # the window's end for the samplers
            return stop_group(proc, a.grace_s), why, lines
    return proc.returncode, None, None


def conflux_point(a):
    row = {"model": a.model, "pipeline": "conflux", "workers": a.workers, "ratio": a.ratio,
           "batch": a.batch, "command": " ".join(a.command)}
    with open(a.log, "w", encoding="utf-8") as out:
        gpu = UtilSampler(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0",
                          period=0.2, watch=a.steps_file).start()
        cpu = CpuSampler().start()
        try:
            proc = subprocess.Popen(a.command, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        except OSError as e:
            gpu.stop(), cpu.stop()
            row.update(status="error", message=f"cannot start: {e}")
            append_row(a.json, row)
            return
        code, stopped, kept = watch_run(proc, gpu, a)
        gpu.stop(), cpu.stop()
    # At most --steps measured: the run's own last steps (its workers leaving) are not.
    lines = read_steps(a.steps_file)[:min(kept or sys.maxsize, a.warmup + a.steps)]
    row["exit_code"] = code
    ok_exit = code == 0 or (stopped and code == 75)
    if len(lines) < a.warmup + a.min_steps:
        tail = [x for x in pathlib.Path(a.log).read_text(errors="replace").splitlines()
                if x.strip()][-3:]
        row.update(status="timeout" if stopped and stopped != "measured" else "error",
                   message=f"{len(lines)} steps reported, {a.warmup + a.min_steps} needed "
                   f"(exit {code}{', stopped: ' + stopped if stopped else ''}): "
                   + " | ".join(tail)[-800:])
        append_row(a.json, row)
        return
    warm, measured = lines[a.warmup - 1], lines[a.warmup:]
    seconds = measured[-1]["time_s"] - warm["time_s"]
    steps = measured[-1]["step"] - warm["step"]
    begin, end = first_seen(gpu.lines_at, a.warmup), first_seen(gpu.lines_at, len(lines))
    ratios = [r.get("offload_ratio", 0.0) for r in measured]
    row.update(status="ok" if ok_exit else "error", steps=steps, seconds=round(seconds, 3),
               samples_per_s=round(a.batch * steps / seconds, 1) if seconds > 0 else None,
               data_wait_ms=round(statistics.fmean(r.get("data_wait_ms", 0.0)
                                                   for r in measured), 2),
               gpu_util_pct=gpu.mean(begin, end)[0] if begin and end else None,
               cpu_cores=cpu.cores(begin, end) if begin and end else None,
               ratio_mean=round(statistics.fmean(ratios), 3), ratio_last=float(ratios[-1]),
               message=None if ok_exit else f"exit {code}")
    append_row(a.json, row)


def fill_missing(a):
    """A row for each worker count of --workers that a process left without one (it was
    stopped at its time limit, or crashed)."""
    rows = load_rows(a.json) if pathlib.Path(a.json).exists() else []
    have = {r["workers"] for r in rows if r["model"] == a.model and r["pipeline"] == a.pipeline}
    for w in (int(x) for x in a.workers.split(",")):
        if w not in have:
            append_row(a.json, {"model": a.model, "pipeline": a.pipeline, "workers": w,
                                "ratio": "-", "status": a.status, "message": a.message})


# --- the report ----------------------------------------------------------------------------


def load_rows(path):
    return [json.loads(x) for x in pathlib.Path(path).read_text().splitlines() if x.strip()]


def label(r):
    """The pipeline's name in tables and the plot; conflux's even share W/(W+1) (the
    benchmark's first ratio at every W) is one line across worker counts."""
    if r["pipeline"] != "conflux":
        return r["pipeline"]
    if r["ratio"] == "auto":
        return "conflux auto"
    w = r["workers"]
    if abs(float(r["ratio"]) - round(w / (w + 1), 2)) < 1e-9:
        return "conflux r=W/(W+1)"
    return f"conflux r={float(r['ratio'])}"


def fmt(v, digits=1):
    return "-" if v is None else (f"{v:.{digits}f}" if isinstance(v, float) else str(v))


def speed_table(rows, model):
    """Markdown: samples/s per pipeline (rows) and worker count (columns) of one model."""
    mine = [r for r in rows if r["model"] == model]
    counts = sorted({r["workers"] for r in mine})
    labels = sorted({label(r) for r in mine}, key=lambda s: (not s.startswith("conflux"), s))
    out = ["| pipeline | " + " | ".join(f"W={w}" for w in counts) + " |",
           "|---|" + "---|" * len(counts)]
    for name in labels:
        cells = []
        for w in counts:
            hit = [r for r in mine if label(r) == name and r["workers"] == w]
            cells.append(fmt(hit[0].get("samples_per_s")) if hit and hit[0]["status"] == "ok"
                         else (hit[0]["status"] if hit else ""))
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out


def best(rows, **match):
    ok = [r for r in rows if r["status"] == "ok" and r.get("samples_per_s")
          and all(r.get(k) == v for k, v in match.items())]
    return max(ok, key=lambda r: r["samples_per_s"]) if ok else None


def acceptance(rows, model):
    """The issue's targets, each judged on the measured rows (or said to be unmeasured)."""
    mine = [r for r in rows if r["model"] == model]
    out = []
    top = max((r for r in mine if r["status"] == "ok" and r.get("gpu_util_pct") is not None),
              key=lambda r: r["gpu_util_pct"], default=None)
    out.append("- GPU >= 90 % utilised with enough workers: " + (
        "not measured (no GPU utilisation figure)" if top is None else
        f"{'met' if top['gpu_util_pct'] >= 90 else 'NOT met'}: highest {top['gpu_util_pct']} % "
        f"({label(top)}, W={top['workers']}, {fmt(top['samples_per_s'])} samples/s)"))
    for w in sorted({r["workers"] for r in mine}):
        c, t = best(mine, pipeline="conflux", workers=w), best(mine, pipeline="pytorch",
                                                               workers=w)
        if c and t:
            x = c["samples_per_s"] / t["samples_per_s"]
            out.append(f"- conflux >= 1.5x PyTorch DataLoader at W={w}: "
                       f"{'met' if x >= 1.5 else 'NOT met'}: {x:.2f}x ({label(c)} "
                       f"{fmt(c['samples_per_s'])} vs {fmt(t['samples_per_s'])} samples/s; CPU "
                       f"cores {fmt(c.get('cpu_cores'))} vs {fmt(t.get('cpu_cores'))})")
        fixed = [r for r in mine if r["pipeline"] == "conflux" and r["workers"] == w
                 and r["ratio"] != "auto" and r["status"] == "ok"]
        auto = best(mine, pipeline="conflux", workers=w, ratio="auto")
        if auto and fixed:
            b = max(fixed, key=lambda r: r["samples_per_s"])
            x = auto["samples_per_s"] / b["samples_per_s"]
            out.append(f"- auto >= 95 % of the best fixed ratio at W={w}: "
                       f"{'met' if x >= 0.95 else 'NOT met'}: {100 * x:.1f} % "
                       f"({fmt(auto['samples_per_s'])} vs r={float(b['ratio'])} "
                       f"{fmt(b['samples_per_s'])}; of {len(fixed)} fixed ratio(s) measured; "
                       f"auto's mean ratio {fmt(auto.get('ratio_mean'), 2)})")
    if not any(r["pipeline"].startswith("dali") and r["status"] == "ok" for r in mine):
        out.append("- conflux >= DALI (CPU) at equal cores: not measured (no DALI rows)")
    return out


def plot(rows, path):
    """samples/s against workers, one line per pipeline and model; returns a note."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no plot: matplotlib is not installed (the tables above hold the figures)"
    fig, ax = plt.subplots(figsize=(8, 5))
    for model in sorted({r["model"] for r in rows}):
        for name in sorted({label(r) for r in rows if r["model"] == model}):
            pts = sorted((r["workers"], r["samples_per_s"]) for r in rows
                         if r["model"] == model and label(r) == name and r["status"] == "ok"
                         and r.get("samples_per_s"))
            if pts:
                ax.plot(*zip(*pts), marker="o", label=f"{model}: {name}")
    ax.set_xticks(sorted({r["workers"] for r in rows}))
    ax.set_xlabel("worker ranks / DataLoader workers")
    ax.set_ylabel("training samples/s")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return f"plot: {path.name}"


def report(a):
    rows = load_rows(a.json) if pathlib.Path(a.json).exists() else []
    out = pathlib.Path(a.out)
    with open(out / "results.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    notes = pathlib.Path(a.notes).read_text() if a.notes else ""
    md = [f"# {a.title}", "", notes.rstrip(), ""]
    for model in sorted({r["model"] for r in rows}):
        md += [f"## {model}: training samples/s against worker count", "",
               *speed_table(rows, model), "", "Acceptance targets (docs/gpu-input-pipeline.md):",
               "", *acceptance(rows, model), ""]
    md += ["## Every row", "",
           "| model | pipeline | W | ratio | status | samples/s | steps | s | data wait ms/step "
           "| GPU % | CPU cores | ratio mean/last | message |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['model']} | {r['pipeline']} | {r['workers']} | {r.get('ratio', '-')} "
                  f"| {r['status']} | {fmt(r.get('samples_per_s'))} | {fmt(r.get('steps'))} "
                  f"| {fmt(r.get('seconds'), 2)} | {fmt(r.get('data_wait_ms'), 2)} "
                  f"| {fmt(r.get('gpu_util_pct'))} | {fmt(r.get('cpu_cores'), 2)} "
                  f"| {fmt(r.get('ratio_mean'), 2)}/{fmt(r.get('ratio_last'), 2)} "
                  f"| {(r.get('message') or '').replace('|', '/')[:300]} |")
    if not rows:
        md.append("(no rows: see the logs)")
    try:
        note = plot(rows, out / "samples_per_s.png") if rows else "no plot: no rows"
    except Exception as e:  # noqa: BLE001 (a broken plot must not lose the tables)
        note = f"no plot: {type(e).__name__}: {e}"
    md += ["", note, ""]
    (out / "results.md").write_text("\n".join(md))
    print("\n".join(md))


def main(argv):
    p = argparse.ArgumentParser(prog="gpu_input_lib.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tile-cifar")
    t.add_argument("src")
    t.add_argument("dest")
    m = sub.add_parser("merge-parts")
    m.add_argument("dest")
    m.add_argument("parts", nargs="+")
    c = sub.add_parser("conflux")
    for name, kind in (("json", str), ("log", str), ("steps-file", str), ("model", str),
                       ("workers", int), ("ratio", str), ("batch", int), ("warmup", int),
                       ("steps", int), ("min-steps", int), ("measure-s", float),
                       ("limit-s", float), ("grace-s", float)):
        c.add_argument(f"--{name}", type=kind, required=name != "grace-s")
    c.set_defaults(grace_s=30.0)
    c.add_argument("command", nargs=argparse.REMAINDER)
    f = sub.add_parser("fill-missing")
    for name in ("json", "model", "pipeline", "workers", "status", "message"):
        f.add_argument(f"--{name}", required=True)
    r = sub.add_parser("report")
    r.add_argument("--json", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--notes")
    r.add_argument("--title", default="End-to-end training throughput by input pipeline")
    a = p.parse_args(argv)
    if a.cmd == "tile-cifar":
        tile_cifar(a.src, a.dest)
    elif a.cmd == "merge-parts":
        merge_parts(a.dest, a.parts)
    elif a.cmd == "fill-missing":
        fill_missing(a)
    elif a.cmd == "conflux":
        a.command = a.command[1:] if a.command[:1] == ["--"] else a.command
        if not a.command or a.warmup < 1 or a.min_steps < 1:
            p.error("conflux: need --warmup >= 1, --min-steps >= 1 and a command after --")
        a.ratio = a.ratio if a.ratio == "auto" else float(a.ratio)
        conflux_point(a)
    else:
        report(a)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
