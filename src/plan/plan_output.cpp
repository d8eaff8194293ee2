#include "conflux/plan/plan_output.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

#include "conflux/core/error.hpp"
#include "plan_output_detail.hpp"
#include "plan_space.hpp"

namespace conflux::plan {

namespace detail {

std::string grouped(std::uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

const char* plural(std::int64_t count) {
  return count == 1 ? "" : "s";
}

std::string describe(const Candidate& c) {
  if (c.gpu) {
    std::string out =
        fmt::format("{} GPU trainer{}, batch {} per GPU, {} data worker{}", c.workers,
                    plural(c.workers), c.aggregator_batch, c.data_workers, plural(c.data_workers));
    if (c.workers > 1 && c.data_workers > 0) {
      out += fmt::format(" ({:g} per GPU)", static_cast<double>(c.data_workers) / c.workers);
    }
    return out;
  }
  std::string out = fmt::format("{} worker{} x {} MB, K = {}, batches Ba = {}, Bn = {}", c.workers,
                                plural(c.workers), c.memory_mb, c.aggregators, c.aggregator_batch,
                                c.nonaggregator_batch);
  if (c.data_workers > 0) {
    out += fmt::format(", {} data worker{}", c.data_workers, plural(c.data_workers));
  }
  return out;
}

double emitted_ratio(double ratio) {
  return std::round(ratio * 1000) / 1000;
}

std::string percent(double value, double base, bool sign) {
  if (base == 0) return "-";
  const double change = 100 * (value - base) / std::abs(base);
  return sign ? fmt::format("{:+.2f} %", change) : fmt::format("{:.2f} %", change);
}

}  // namespace detail

namespace {

using namespace detail;

std::int64_t global_batch(const Candidate& c) {
  return static_cast<std::int64_t>(c.aggregators) * c.aggregator_batch +
         static_cast<std::int64_t>(c.workers - c.aggregators) * c.nonaggregator_batch;
}

}  // namespace

std::string format_seconds(double seconds) {
  if (!std::isfinite(seconds)) return fmt::format("{} s", seconds);
  if (std::abs(seconds) < 1) return fmt::format("{:.1f} ms", 1e3 * seconds);
  if (std::abs(seconds) < 100) {
    // "60 s", "1.5 s", "12.35 s": two decimals without trailing zeros.
    std::string text = fmt::format("{:.2f}", seconds);
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
    return text + " s";
  }
  std::string text = fmt::format("{:.0f} s", seconds);
  if (seconds >= 3600) {
    const auto s = static_cast<std::int64_t>(std::llround(seconds));
    text += fmt::format(" ({}:{:02d}:{:02d})", s / 3600, s / 60 % 60, s % 60);
  }
  return text;
}

std::string format_usd(double usd) {
  if (usd == 0 || !std::isfinite(usd)) return fmt::format("${}", usd);
  const double size = std::abs(usd);
  if (size < 1e-6) return fmt::format("${:.3e}", usd);
  if (size >= 1000) return fmt::format("${:.2f}", usd);
  const int decimals = std::max(0, 3 - static_cast<int>(std::floor(std::log10(size))));
  return fmt::format("${:.{}f}", usd, decimals);
}

namespace {

// The chosen configuration: batch, time, per-iteration terms and cost.
std::string render_chosen(const Scored& chosen, const CostModel& model,
                          const PlanRequest& request) {
  const auto& [best, p] = chosen;
  const bool lambda = model.options().target == Target::kLambda;
  std::string out;
  out += fmt::format("\nchosen: {}\n", describe(best));
  out += fmt::format("  global batch {} samples per iteration", p.samples_per_iteration);
  if (!lambda) {
    out += fmt::format(", {} core{} per worker", model.cores(best.memory_mb),
                       plural(model.cores(best.memory_mb)));
  }
  const int threads = model.threads_of(best);
  out += fmt::format(", {} BLAS thread{} (cluster.blas_threads)", threads, plural(threads));
  out += "\n";
  out += fmt::format("  throughput: {:.0f} samples/s\n",
                     static_cast<double>(p.samples_per_iteration) / p.iteration_s);
  out +=
      fmt::format("  time: {} iterations x {} = {} ({:.1f} % of the deadline to spare)\n",
                  grouped(p.iterations), format_seconds(p.iteration_s), format_seconds(p.total_s),
                  100 * (request.deadline_s - p.total_s) / request.deadline_s);
  const char* comm = lambda ? "S3 transfers" : "gradient sync";
  out += fmt::format("  per iteration: T_train {} + T_trans {} + {} {}", format_seconds(p.train_s),
                     format_seconds(p.transfer_s), comm, format_seconds(p.comm_s));
  if (best.aggregators < best.workers) {
    out += fmt::format(" (aggregator {}, non-aggregator {})", format_seconds(p.aggregator_s),
                       format_seconds(p.nonaggregator_s));
  }
  out += "\n";
  if (best.data_workers > 0) {
    out += fmt::format(
        "  input: {} data worker{} x {} thread{} build {:.1f} % of the batches (data.offload_ratio "
        "{:.3f}) in {} per iteration; all built by the trainer, T_train would be {}\n",
        best.data_workers, plural(best.data_workers), model.options().worker_threads,
        plural(model.options().worker_threads), 100 * p.offload_ratio,
        emitted_ratio(p.offload_ratio), format_seconds(p.data_worker_s), format_seconds(p.local_s));
    Candidate alone = best;
    alone.data_workers = 0;
    const Prediction q = model.predict(alone);
    out +=
        fmt::format("  without data workers: {} in all ({} the {} the plan must stay within), {}\n",
                    format_seconds(q.total_s), q.total_s <= request.budget_s() ? "meets" : "misses",
                    format_seconds(request.budget_s()), format_usd(q.cost_usd));
  }
  if (lambda) {
    out += fmt::format("  cost: {} = GB-seconds {} + requests {} + S3 requests {}\n",
                       format_usd(p.cost_usd), format_usd(p.compute_cost_usd),
                       format_usd(p.request_cost_usd), format_usd(p.storage_cost_usd));
  } else {
    const int cores = best.workers * model.cores(best.memory_mb) +
                      best.data_workers * model.options().worker_threads;
    out += fmt::format("  cost: {} in core-hours ({} core{})\n", format_usd(p.cost_usd), cores,
                       plural(cores));
  }
  return out;
}

// The ranked table, best first; with data workers in the space, D and the offload ratio too.
std::string render_ranked(const PlanResult& result, const PlanRequest& request) {
  const Prediction& p = result.ranked.front().second;
  const bool input = request.space.max_data_workers > 0;
  const bool threads = request.space.thread_counts.size() > 1;
  std::string out;
  out += request.distinct ? fmt::format(
                                "\nranked: distinct (W, K, Ba, Bn{}{}), each at its cheapest "
                                "memory size\n",
                                input ? ", D" : "", threads ? ", threads" : "")
                          : "\nranked: all points of the space\n";
  out += fmt::format("{:>4} {:>4} {:>6} {:>4} {:>5} {:>5} {:>7}", "rank", "W", "M MB", "K", "Ba",
                     "Bn", "global");
  if (input) out += fmt::format(" {:>3} {:>7}", "D", "offload");
  if (threads) out += fmt::format(" {:>7}", "threads");
  out += fmt::format(" {:>11} {:>12} {:>12} {:>10}\n", "iterations", "time", "cost", "vs best");
  for (std::size_t i = 0; i < result.ranked.size(); ++i) {
    const auto& [c, q] = result.ranked[i];
    out += fmt::format("{:>4} {:>4} {:>6} {:>4} {:>5} {:>5} {:>7}", i + 1, c.workers, c.memory_mb,
                       c.aggregators, c.aggregator_batch, c.nonaggregator_batch,
                       q.samples_per_iteration);
    if (input) out += fmt::format(" {:>3} {:>7.3f}", c.data_workers, q.offload_ratio);
    if (threads) out += fmt::format(" {:>7}", c.threads);
    out += fmt::format(" {:>11} {:>12} {:>12} {:>10}\n", grouped(q.iterations),
                       format_seconds(q.total_s), format_usd(q.cost_usd),
                       i == 0 ? "best" : percent(q.cost_usd, p.cost_usd));
  }
  return out;
}

// "batch rules: Ba = 32, Bn = 1 x Ba, global batch <= 1024" when the space has any.
std::string batch_rules_text(const PlanSpace& s) {
  std::vector<std::string> rules;
  if (s.aggregator_batch > 0) rules.push_back(fmt::format("Ba = {}", s.aggregator_batch));
  if (s.nonaggregator_batch_ratio > 0) {
    rules.push_back(fmt::format("Bn = {} x Ba", s.nonaggregator_batch_ratio));
  }
  if (s.max_global_batch > 0) {
    rules.push_back(fmt::format("global batch <= {}", s.max_global_batch));
  }
  return rules.empty() ? "" : fmt::format("batch rules: {}\n", fmt::join(rules, ", "));
}

// ", margin 12.3 % (predicted within 534 s)" when there is a margin.
std::string margin_text(const PlanRequest& request) {
  if (request.margin <= 0) return "";
  return fmt::format(", margin {:.1f} % (predicted within {})", 100 * request.margin,
                     format_seconds(request.budget_s()));
}

// With a target: the best-ranked configurations with a smaller and with a larger global batch
// than the choice, and where each loses.
std::string render_batch_why(const PlanResult& result) {
  const Prediction& p = result.ranked.front().second;
  const Scored* smaller = nullptr;
  const Scored* larger = nullptr;
  for (std::size_t i = 1; i < result.ranked.size(); ++i) {
    const Prediction& q = result.ranked[i].second;
    if (smaller == nullptr && q.samples_per_iteration < p.samples_per_iteration)
      smaller = &result.ranked[i];
    if (larger == nullptr && q.samples_per_iteration > p.samples_per_iteration)
      larger = &result.ranked[i];
  }
  std::string out;
  const auto line = [&](const Scored& x, const char* why) {
    const Prediction& q = x.second;
    out += fmt::format("\n  global batch {}: {} iterations x {} = {}, {} dearer: {}",
                       q.samples_per_iteration, grouped(q.iterations),
                       format_seconds(q.iteration_s), format_seconds(q.total_s),
                       percent(q.cost_usd, p.cost_usd, /*sign=*/false), why);
  };
  if (smaller != nullptr) line(*smaller, "more iterations than its shorter iterations make up for");
  if (larger != nullptr)
    line(*larger,
         "fewer iterations, but not in proportion to the batch (S(B) flattens towards "
         "B_noise), so more samples, and each iteration costs more");
  return out.empty() ? "" : "\nsmaller and larger batches, to the target:" + out + "\n";
}

// Why the choice wins, and what the search cost.
std::string render_why(const PlanResult& result, const PlanRequest& request) {
  const Prediction& p = result.ranked.front().second;
  std::string out;
  out += fmt::format(
      "\nwhy: the cheapest of the {} configurations in the space that meet {} "
      "(exact search)",
      grouped(result.space_size), format_seconds(request.budget_s()));
  // Distinct: the runners-up differ in (W, K, Ba, Bn), each at its own cheapest memory size.
  const char* next = request.distinct ? "the next different configuration (W, K, batches)"
                                      : "the next configuration";
  if (result.ranked.size() > 1) {
    out += fmt::format("; {} is {} dearer", next,
                       percent(result.ranked[1].second.cost_usd, p.cost_usd, /*sign=*/false));
  } else {
    out += request.distinct ? "; no other (W, K, batches) meets the deadline"
                            : "; no other configuration meets the deadline";
  }
  out += fmt::format("\nsearch: {} predictions evaluated in {:.3f} s\n", grouped(result.evaluated),
                     result.elapsed_s);
  return out;
}

// The BLAS threads a trainer computes on and the share they can use.
std::string compute_text(const CostModel& model, const PlanSpace& space) {
  const std::vector<int> threads = detail::planned_threads(model, space);
  if (threads.size() == 1) {
    return fmt::format(
        "compute: {} thread{} per rank (cluster.blas_threads): T_train stops falling above "
        "{:.0f} MB\n",
        threads[0], plural(threads[0]), model.compute_cap_mb(threads[0]));
  }
  return fmt::format(
      "compute: {} BLAS threads per rank, each count with its own profiled T_train, which "
      "stops falling above threads x {:.0f} MB; the emitted config sets cluster.blas_threads\n",
      fmt::join(threads, ", "), model.model().mb_per_vcpu);
}

// Whether and how the plan places preprocessing on data-service ranks.
std::string input_text(const CostModel& model, const PlanSpace& space) {
  const PerformanceModel& m = model.model();
  if (space.max_data_workers == 0) {
    if (model.options().target == Target::kLambda || m.prices_input()) return "";
    return "input: no data workers (the model has no batch-build times: profile and fit again "
           "to price them)\n";
  }
  return fmt::format(
      "input: 0..{} data workers of {} thread{} (cluster.worker_threads, a core each); one "
      "batch on one thread takes P(B) = {:.3g} ms + {:.3g} ms x B; offloading saves a trainer "
      "T_train - T_c\n",
      space.max_data_workers, model.options().worker_threads,
      plural(model.options().worker_threads), 1e3 * m.input.p0, 1e3 * m.input.p1);
}

// How the steps to the target were derived, and what they are at a few global batches.
std::string steps_to_target_text(const StepsToTarget& t) {
  std::string out = fmt::format(
      "statistical efficiency: steps to the target S(B) = S_min (1 + B_noise / B) with "
      "B_noise {:.0f} and S_min {:.1f}, from the reference run {} (global batch {:.0f}: {:.0f} "
      "steps)\n  S(B):",
      t.b_noise, t.s_min, t.source, t.reference_batch, t.reference_steps);
  for (const double b : {32.0, 128.0, 512.0, 2048.0, 8192.0})
    out += fmt::format("  {:.0f}: {} steps ({:.2f} x the fewest samples)", b, t.steps(b),
                       1.0 + b / t.b_noise);
  return out +
         "\n  larger batches need fewer steps but more samples; beyond B_noise the steps "
         "stop falling\n";
}

}  // namespace

std::string render_plan_report(const PlanResult& result, const CostModel& model,
                               const PlanRequest& request) {
  CONFLUX_REQUIRE(result.feasible && !result.ranked.empty(), "{}",
                  render_infeasible(result, request));
  const CostModelOptions& o = model.options();
  const PerformanceModel& m = model.model();
  const bool lambda = o.target == Target::kLambda;
  const std::string work =
      o.to_target != nullptr
          ? fmt::format("until {}", o.to_target->target.describe())
          : fmt::format(
                "{} epoch{} of {} samples (a fixed amount of work: the accuracy a "
                "batch reaches is not modelled)",
                o.epochs, plural(o.epochs), m.epoch_samples);
  std::string out = fmt::format("conflux plan: {}{}, {}, deadline {}{}\n", to_string(o.target),
                                lambda ? fmt::format(" ({}, K-Reduce over S3)", to_string(o.arch))
                                       : std::string(" (MPI allreduce)"),
                                work, format_seconds(request.deadline_s), margin_text(request));
  if (o.to_target != nullptr) out += steps_to_target_text(*o.to_target);
  if (!m.source.empty()) out += fmt::format("model: {}\n", m.source);
  if (m.gpu.present()) {
    out += detail::gpu_text(model, request.space);
  } else {
    out += compute_text(model, request.space);
    out += input_text(model, request.space);
  }
  out += batch_rules_text(request.space);
  out += result.ranked.front().first.gpu ? detail::render_chosen_gpu(result, model, request)
                                         : render_chosen(result.ranked.front(), model, request);
  out += render_ranked(result, request);
  out += render_why(result, request);
  if (o.to_target != nullptr) out += render_batch_why(result);
  return out;
}

std::string render_infeasible(const PlanResult& result, const PlanRequest& request) {
  std::string out = fmt::format("no configuration meets {}{}", format_seconds(request.deadline_s),
                                margin_text(request));
  if (result.fastest) {
    const auto& [c, p] = *result.fastest;
    out += fmt::format("; the fastest is {} with {}, costing {}", format_seconds(p.total_s),
                       describe(c), format_usd(p.cost_usd));
  }
  return out;
}

std::vector<Setting> planned_settings(const Candidate& c, Target target, double offload_ratio) {
  // K = W is plain allreduce (also on Lambda: every worker aggregates its own chunk). The
  // allreduce keys are set explicitly so that a base's K-Reduce settings are cleared.
  const bool kreduce = target == Target::kLambda && c.aggregators < c.workers;
  // The plan sizes the trainers by M and a data worker by its threads (one core each), so
  // limits.memory_mb binds the trainers alone when there are data workers.
  std::vector<Setting> out{
      {"cluster.trainers", c.workers},
      {"cluster.workers", c.data_workers},
      {"data.offload_ratio", c.data_workers > 0 ? emitted_ratio(offload_ratio) : 0.0},
      {"data.offload_ratios", std::vector<double>{}},  // else a base's list would win
      {"train.batch_size", global_batch(c)},
      {"comm.strategy", kreduce ? "kreduce" : "allreduce"},
      {"comm.aggregators", kreduce ? c.aggregators : 0},
      {"comm.nonaggregator_batch_size", kreduce ? c.nonaggregator_batch : 0},
      {"comm.stale_nonaggregators", kreduce},
      // A GPU trainer is not sized by a CPU share: no limits.
      {"limits.memory_mb", c.gpu ? 0 : c.memory_mb},
      {"limits.ranks", c.data_workers > 0 && !c.gpu ? "trainers" : "all"}};
  if (c.threads > 0) out.push_back({"cluster.blas_threads", c.threads});
  if (c.gpu) out.push_back({"train.device", "gpu"});
  return out;
}

std::vector<Setting> scaled_lr_settings(const Config& base, std::int64_t batch, LrScaling scaling,
                                        std::uint64_t epoch_samples) {
  const auto& t = base.train();
  const double ratio = static_cast<double>(batch) / static_cast<double>(t.batch_size);
  if (scaling == LrScaling::kNone || ratio == 1.0) return {};
  const double factor = scaling == LrScaling::kLinear ? ratio : std::sqrt(ratio);
  std::vector<Setting> out{{"train.lr", t.lr * factor}};
  if (scaling == LrScaling::kLinear && factor > 1 && t.warmup_steps == 0) {
    const auto per_epoch =
        static_cast<std::int64_t>((epoch_samples + static_cast<std::uint64_t>(batch) - 1) /
                                  static_cast<std::uint64_t>(batch));
    out.push_back({"train.warmup_steps", per_epoch});
  }
  return out;
}

std::string emit_config(const Candidate& c, Target target, const Config& base,
                        const std::vector<Setting>& lr, double offload_ratio) {
  std::vector<Setting> settings = planned_settings(c, target, offload_ratio);
  settings.insert(settings.end(), lr.begin(), lr.end());
  const Config planned = base.with(settings, "conflux plan");
  return fmt::format("# conflux plan ({}): {}\n", to_string(target), describe(c)) +
         planned.launchable_toml();
}

std::string emit_sbatch_header(const Candidate& c, double predicted_total_s,
                               std::string_view job_name, double mb_per_vcpu, int worker_threads) {
  CONFLUX_REQUIRE(mb_per_vcpu > 0 && std::isfinite(predicted_total_s) && predicted_total_s >= 0 &&
                      worker_threads >= 1,
                  "an #SBATCH header needs mb_per_vcpu > 0, a predicted time >= 0 and worker "
                  "threads >= 1, got {}, {} s and {}",
                  mb_per_vcpu, predicted_total_s, worker_threads);
  const int cpus = std::max(1, static_cast<int>(std::ceil(c.memory_mb / mb_per_vcpu)));
  const auto mem_per_cpu =
      static_cast<std::int64_t>(std::ceil(static_cast<double>(c.memory_mb) / cpus));
  // 20 % margin for the model's error and start-up, in whole minutes; conflux checkpoints on
  // SIGUSR1 120 s before the limit, so an underestimate costs a requeue, not the run. The limit
  // also leaves the 120 s of that warning beyond the prediction, or a short job would be told
  // to stop as soon as it starts.
  const double limit_s = std::max(predicted_total_s * 1.2, predicted_total_s + 180.0);
  const auto minutes = static_cast<std::int64_t>(std::ceil(limit_s / 60 - 1e-9));
  const std::int64_t days = minutes / (24 * 60);
  const std::string time =
      days > 0 ? fmt::format("{}-{:02d}:{:02d}:00", days, minutes / 60 % 24, minutes % 60)
               : fmt::format("{:02d}:{:02d}:00", minutes / 60, minutes % 60);
  std::string name(job_name.empty() ? std::string_view("conflux-plan") : job_name);
  for (char& ch : name) {
    if (ch == ' ' || ch == '\t' || ch == '\n') ch = '-';
  }
  std::string out = fmt::format("# conflux plan: {}; predicted {}, --time with 20 % margin\n",
                                describe(c), format_seconds(predicted_total_s));
  if (c.data_workers > 0) {
    out +=
        "# heterogeneous job: component 0 the trainers, component 1 the data workers (ranks\n"
        "# after the trainers); launch with srun --het-group=0,1 as slurm/hetjob.sbatch does\n";
  }
  out += fmt::format("#SBATCH --job-name={}\n", name);
  out += fmt::format("#SBATCH --ntasks={}\n", c.workers);
  out += fmt::format("#SBATCH --cpus-per-task={}\n", cpus);
  if (c.gpu) {
    // A GPU trainer's host memory is the site's per-GPU default, not a CPU share's.
    out += "#SBATCH --gpus-per-task=1\n";
  } else {
    out += fmt::format("#SBATCH --mem-per-cpu={}M\n", mem_per_cpu);
  }
  out += fmt::format("#SBATCH --time={}\n", time);
  out += "#SBATCH --signal=B:USR1@120\n";
  out += "#SBATCH --requeue\n";
  if (c.data_workers > 0) {
    // A data worker runs one preprocessing thread per core, with a vCPU's worth of memory each.
    out += "#SBATCH hetjob\n";
    out += fmt::format("#SBATCH --ntasks={}\n", c.data_workers);
    out += fmt::format("#SBATCH --cpus-per-task={}\n", worker_threads);
    out += fmt::format("#SBATCH --mem-per-cpu={}M\n",
                       static_cast<std::int64_t>(std::ceil(mb_per_vcpu)));
  }
  return out;
}

}  // namespace conflux::plan
