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
  // 0 is what a line without the field reads as (all three count from 1).
  if (s.steps_in_epoch == 0 || s.epoch == 0 || s.epoch_step == 0) return kNaN;
  return static_cast<double>(s.epoch - 1) +
         static_cast<double>(s.epoch_step) / static_cast<double>(s.steps_in_epoch);
}

// How a profile window's value is drawn: at the window's middle (a mean over the window), or
// held from its start to the next window's (a value in force during it: gnuplot's steps).
enum class WindowPlacement { kMiddle, kHeld };

// One series per trainer from its profile windows (profile-trainer<t>.jsonl); when no window
// holds a value, rank 0's per report from steps.jsonl. `window_value` and `step_value` are the
// same quantity in the two records.
void add_per_trainer_or_steps(Plot& p, const RunRecords& r, double ProfileWindow::*window_value,
                              double StepRecord::*step_value, WindowPlacement placement,
                              const std::string& style) {
  const std::size_t before = p.series.size();
  for (const auto& [trainer, windows] : r.profiles) {
    Series s{.title = fmt::format("trainer {}", trainer), .style = style};
    for (const ProfileWindow& w : windows) {
      s.x.push_back(placement == WindowPlacement::kMiddle ? w.t_s + w.window_s / 2 : w.t_s);
      s.y.push_back(w.*window_value);
    }
    if (placement == WindowPlacement::kHeld && !windows.empty()) {
      s.x.push_back(windows.back().t_s + windows.back().window_s);
      s.y.push_back(windows.back().*window_value);
    }
    add(p, std::move(s));
  }
  if (p.series.size() > before) return;
  Series s{.title = "rank 0, per report (steps.jsonl)", .style = style};
  for (const StepRecord& st : r.steps) {
    s.x.push_back(st.time_s);
    s.y.push_back(st.*step_value);
  }
  add(p, std::move(s));
}

// With train.clip_grad_norm, steps.jsonl holds each report's gradient norm before clipping:
// drawn on a right-hand axis of its own, as the loss's x positions.
void add_grad_norm(const RunRecords& r, Figure& f, Plot& p) {
  Series norms{.title = "gradient L2 norm before clipping, per report (right axis)",
               .style = "lines lw 1 dt 2",
               .right_axis = true};
  for (const StepRecord& s : r.steps) {
    norms.x.push_back(epoch_position(s));
    norms.y.push_back(s.grad_norm.value_or(kNaN));
  }
  if (!has_data(norms)) return;
  p.y2label = "gradient L2 norm";
  add(p, std::move(norms));
  f.caption +=
      " The dashed line (right axis) is the L2 norm of the merged gradient of each report's "
      "last step before train.clip_grad_norm clipped it (steps.jsonl's grad_norm).";
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
  if (loss && !p.series.empty()) add_grad_norm(r, f, p);
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
  add_per_trainer_or_steps(p, r, &ProfileWindow::data_wait_ms, &StepRecord::data_wait_ms,
                           WindowPlacement::kMiddle, "lines lw 1.5");
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
  // A window's line holds the ratio in force during it (a decision at its end applies from the
  // next window), so each value is drawn from the window's start to the next's.
  add_per_trainer_or_steps(p, r, &ProfileWindow::offload_ratio, &StepRecord::offload_ratio,
                           WindowPlacement::kHeld, "steps lw 2");
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
