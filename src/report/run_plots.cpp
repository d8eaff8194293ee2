#include "conflux/report/run_plots.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace conflux::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// More numbered decisions than this would bury the curve; the page's table lists them all.
constexpr std::size_t kMaxLabels = 40;

bool has_data(const Series& s) {
  return std::any_of(s.y.begin(), s.y.end(), [](double y) { return std::isfinite(y); });
}

// Adds `s` when it holds at least one number: an empty series would make gnuplot fail.
void add(Plot& plot, Series s) {
  if (has_data(s)) plot.series.push_back(std::move(s));
}

// The figure with its plot when some series holds data, else with `missing`.
Figure finish(Figure f, Plot plot, const std::string& missing) {
  if (plot.series.empty()) {
    f.missing = missing;
  } else {
    f.plot = std::move(plot);
  }
  return f;
}

// A step's place on an epoch axis: epoch 2, step 50 of 100 is 1.5.
double epoch_position(const StepRecord& s) {
  if (!(s.steps_in_epoch > 0) || !std::isfinite(s.epoch) || !std::isfinite(s.epoch_step)) {
    return kNaN;
  }
  return s.epoch - 1 + s.epoch_step / s.steps_in_epoch;
}

Figure learning_curve(const RunRecords& r, bool loss) {
  const char* what = loss ? "loss" : "accuracy";
  Figure f{.file = fmt::format("{}.png", what),
           .heading = loss ? "Loss" : "Accuracy",
           .caption = fmt::format(
               "Training {} every train.log_every steps (the running value over the steps "
               "since the previous report, steps.jsonl) and per epoch, with the test {} after "
               "each epoch (metrics.jsonl). The x axis counts epochs; a step's point sits at "
               "its fraction of the epoch.",
               what, what)};
  Plot p{.title = fmt::format("{} per step and per epoch", what),
         .xlabel = "epoch",
         .ylabel = what,
         .y_from_zero = loss,
         .key = "below"};
  Series steps{.title = "train, per report (steps.jsonl)", .style = "lines lw 1.5"};
  for (const StepRecord& s : r.steps) {
    steps.x.push_back(epoch_position(s));
    steps.y.push_back(loss ? s.loss : s.accuracy);
  }
  Series train{.title = "train, per epoch", .style = "linespoints pt 7 lw 2"};
  Series test{.title = "test, per epoch", .style = "linespoints pt 5 lw 2"};
  for (const EpochRecord& e : r.epochs) {
    train.x.push_back(e.epoch);
    train.y.push_back(loss ? e.train_loss : e.train_accuracy);
    test.x.push_back(e.epoch);
    test.y.push_back(loss ? e.test_loss : e.test_accuracy);
  }
  add(p, std::move(steps));
  add(p, std::move(train));
  add(p, std::move(test));
  return finish(std::move(f), std::move(p),
                "neither steps.jsonl nor metrics.jsonl holds a value: no step was reported");
}

Figure throughput(const RunRecords& r) {
  Figure f{.file = "throughput.png",
           .heading = "Samples per second",
           .caption =
               "Training samples per second over the whole job: per report (steps.jsonl, "
               "the steps since the previous report) and per epoch (metrics.jsonl, drawn "
               "at the epoch's end). Time counts from the start of training, across "
               "resumes."};
  Plot p{
      .title = "training throughput", .xlabel = "time (s)", .ylabel = "samples/s", .key = "below"};
  Series steps{.title = "per report (steps.jsonl)", .style = "lines lw 1.5"};
  for (const StepRecord& s : r.steps) {
    steps.x.push_back(s.time_s);
    steps.y.push_back(s.samples_per_s);
  }
  Series epochs{.title = "per epoch (metrics.jsonl)", .style = "linespoints pt 7 lw 2"};
  for (const EpochRecord& e : r.epochs) {
    epochs.x.push_back(e.elapsed_seconds);
    epochs.y.push_back(e.samples_per_s);
  }
  add(p, std::move(steps));
  add(p, std::move(epochs));
  return finish(std::move(f), std::move(p), "neither steps.jsonl nor metrics.jsonl was written");
}

Figure data_wait(const RunRecords& r) {
  Figure f{.file = "data-wait.png",
           .heading = "Data wait",
           .caption =
               "Mean time a step waited for its batch, per profiling window and trainer "
               "(profile-trainer<t>.jsonl; steps.jsonl's rank-0 figure when there is no "
               "profile). Time is each trainer's profile clock."};
  Plot p{
      .title = "data wait per step", .xlabel = "time (s)", .ylabel = "ms per step", .key = "below"};
  for (const auto& [trainer, windows] : r.profiles) {
    Series s{.title = fmt::format("trainer {}", trainer), .style = "lines lw 1.5"};
    for (const ProfileWindow& w : windows) {
      s.x.push_back(w.t_s + w.window_s / 2);  // a window's mean, at its middle
      s.y.push_back(w.data_wait_ms);
    }
    add(p, std::move(s));
  }
  if (p.series.empty()) {
    Series s{.title = "rank 0, per report (steps.jsonl)", .style = "lines lw 1.5"};
    for (const StepRecord& st : r.steps) {
      s.x.push_back(st.time_s);
      s.y.push_back(st.data_wait_ms);
    }
    add(p, std::move(s));
  }
  return finish(std::move(f), std::move(p),
                "no profile-trainer<t>.jsonl and no steps.jsonl: the data wait was not recorded");
}

void add_decisions(const RunRecords& r, Plot& p) {
  Series marks{.title = "controller decision (numbered as in the table)",
               .style = "points pt 7 ps 1.6 lc rgb 'black'"};
  for (std::size_t i = 0; i < r.decisions.size(); ++i) {
    const Decision& d = r.decisions[i];
    marks.x.push_back(d.t_s);
    marks.y.push_back(d.to);
    if (i < kMaxLabels) p.labels.push_back({d.t_s, d.to, std::to_string(i + 1)});
  }
  add(p, std::move(marks));
}

Figure offload(const RunRecords& r) {
  Figure f{.file = "offload.png",
           .heading = "Offload ratio",
           .caption =
               "Share of each trainer's batches built by the workers, as in force at the "
               "end of each profiling window (profile-trainer<t>.jsonl), with the "
               "controller's decisions marked at the ratio they chose; the search's "
               "probes between decisions show as short excursions."};
  Plot p{.title = "offload ratio",
         .xlabel = "time (s)",
         .ylabel = "offload ratio",
         .yrange = "[0:1.05]",
         .key = "below"};
  for (const auto& [trainer, windows] : r.profiles) {
    // A window's line holds the ratio in force during it (a decision at its end applies
    // from the next window), so each value is drawn from the window's start to the next's.
    Series s{.title = fmt::format("trainer {}", trainer), .style = "steps lw 2"};
    for (const ProfileWindow& w : windows) {
      s.x.push_back(w.t_s);
      s.y.push_back(w.offload_ratio);
    }
    if (!windows.empty()) {
      s.x.push_back(windows.back().t_s + windows.back().window_s);
      s.y.push_back(windows.back().offload_ratio);
    }
    add(p, std::move(s));
  }
  if (p.series.empty()) {
    Series s{.title = "rank 0, per report (steps.jsonl)", .style = "steps lw 2"};
    for (const StepRecord& st : r.steps) {
      s.x.push_back(st.time_s);
      s.y.push_back(st.offload_ratio);
    }
    add(p, std::move(s));
  }
  if (p.series.empty()) {
    return finish(std::move(f), std::move(p), "no profile and no steps.jsonl: no ratio recorded");
  }
  add_decisions(r, p);
  if (r.decisions.empty())
    f.caption += " This run made no decision (a fixed ratio, or none was due).";
  return finish(std::move(f), std::move(p), "");
}

Figure checkpoint_stalls(const RunRecords& r) {
  Figure f{.file = "checkpoints.png",
           .heading = "Checkpoint stalls",
           .caption =
               "How long each checkpoint held up training on a trainer's main thread "
               "(the timeline's \"checkpoint\" spans, e.g. the capture of the state; the "
               "file is written in the background)."};
  Plot p{.title = "checkpoint stalls",
         .xlabel = fmt::format("time (s, {})", r.timeline_clock),
         .ylabel = "stall (ms)",
         .key = "below"};
  std::map<std::pair<int, std::string>, Series> series;
  for (const CheckpointStall& s : r.stalls) {
    Series& line = series[{s.trainer, s.name}];
    line.title = fmt::format("trainer {}: {}", s.trainer, s.name);
    line.style = "impulses lw 3";
    line.x.push_back(s.t_s);
    line.y.push_back(s.ms);
  }
  for (auto& [key, s] : series) {
    // A dot on each impulse, so that a stall of a few microseconds is still seen.
    Series dots{.title = "", .x = s.x, .y = s.y, .style = "points pt 7 ps 0.8 lc rgb 'black'"};
    add(p, std::move(s));
    add(p, std::move(dots));
  }
  if (!r.stalls.empty()) {
    double total = 0, worst = 0;
    for (const CheckpointStall& s : r.stalls) total += s.ms, worst = std::max(worst, s.ms);
    p.title = fmt::format("checkpoint stalls: {} spans, {:.1f} ms in all, longest {:.1f} ms",
                          r.stalls.size(), total, worst);
  }
  return finish(std::move(f), std::move(p),
                r.timeline_clock.empty()
                    ? "no timeline was read, so the checkpoint stalls are unknown"
                    : "the timeline holds no checkpoint span: no checkpoint was taken "
                      "(checkpoint.every_steps and every_seconds unset, or none was due)");
}

}  // namespace

std::vector<Figure> run_figures(const RunRecords& records) {
  std::vector<Figure> figures;
  figures.push_back(learning_curve(records, true));
  figures.push_back(learning_curve(records, false));
  figures.push_back(throughput(records));
  figures.push_back(data_wait(records));
  figures.push_back(offload(records));
  figures.push_back(checkpoint_stalls(records));
  return figures;
}

}  // namespace conflux::report
