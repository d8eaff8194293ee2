// conflux-bench gemm-limit: how close one training step of a model comes to the time its
// SGEMM calls alone take on this machine. Records every cblas_sgemm call of one step
// (forward, backward-data, backward-weights) with its exact shape (sgemm_probe.hpp), times
// OpenBLAS on each shape alone (warm operands, medians), and sums them into the "GEMM-limit
// step time"; in the same run, in alternating rounds, times the real step (Model forward +
// loss + backward + optimiser step, one trainer, a synthetic batch already in memory). Then
// breaks the real model's step down by layer and phase (a model::LayerObserver clocks each
// layer call; graphs included).
//
// With oneDNN's convolutions (train.conv_kernels, docs/speed.md) the step issues no SGEMM
// for them: the GEMM-limit is then that of the im2col formulation's calls, recorded from the
// same model built with im2col, and the step is timed with the configured kernels.

#include <cblas.h>
#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>

#include "conflux/config/config.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/model/graph.hpp"
#include "conflux/model/layer.hpp"
#include "conflux/model/loss.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/optimizer.hpp"
#include "conflux/model/sgd.hpp"
#include "conflux/train/model_setup.hpp"
#include "conflux/train/training_data.hpp"
#include "conflux/train/transform_setup.hpp"
#include "report.hpp"
#include "scenarios.hpp"
#include "sgemm_probe.hpp"
#include "stats.hpp"

namespace conflux::bench {

namespace po = boost::program_options;
using model::Tensor;

namespace {

struct Options {
  std::string config = "configs/cifar10_cnn.toml";
  std::vector<std::string> overrides;
  int rounds = 7;
  int steps = 3;  // timed steps per round
};

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The model, its optimiser and one synthetic batch: what a single trainer holds in a step.
struct Setup {
  model::SampleShape input;
  int classes = 0;
  int batch = 0;
  std::optional<model::Model> net;
  std::unique_ptr<model::Optimizer> optimizer;
  Tensor images;
  std::vector<model::Label> labels;
  Tensor grad_logits;
  std::uint64_t seed = 0;   // run.seed: dropout masks
  std::uint64_t steps = 0;  // training steps taken: dropout masks
};

// The model of `config` computing as `options` say, and its optimiser, into `s`.
void build_net(Setup& s, const Config& config, const model::LayerOptions& options) {
  s.net.emplace(config.layers(), s.input, s.classes, config.run().seed, options);
  s.optimizer = model::make_optimizer(config.train(), s.net->params().size());
}

Setup make_setup(const Config& config, const model::LayerOptions& options) {
  Setup s;
  // The input shape as a trainer sees it: the dataset's through the configured transform.
  const data::SourceSplits data = train::open_training_data(config);
  const data::ImageShape in = train::make_transform(config, *data.train).output_shape();
  s.input = {in.channels, in.height, in.width};
  s.classes = data.train->info().num_classes;
  s.batch = config.train().batch_size;
  s.seed = config.run().seed;
  build_net(s, config, options);
  // Synthetic, standardised-looking pixels and uniform labels: data loading is not measured.
  Rng rng{config.run().seed, 0x67656d6d};
  s.images.resize({s.batch, in.channels, in.height, in.width});
  for (float& x : s.images.data) x = rng.uniform(-2.0f, 2.0f);
  for (int i = 0; i < s.batch; ++i)
    s.labels.push_back(static_cast<model::Label>(rng.next() % static_cast<unsigned>(s.classes)));
  return s;
}

// OpenBLAS alone on one shape: warm operands, `block` back-to-back calls; seconds per call.
struct ShapeTimer {
  SgemmShape shape;
  int per_step = 0;  // calls of this shape in one step
  std::vector<float> a, b, c;
  std::vector<double> per_call;  // one entry per round

  void time_block() {
    const int block = std::min(per_step, 32);
    const auto start = Clock::now();
    for (int i = 0; i < block; ++i) real_sgemm(shape, a.data(), b.data(), c.data());
    per_call.push_back(seconds_since(start) / block);
  }
};

std::vector<ShapeTimer> make_shape_timers(const std::vector<SgemmShape>& calls) {
  std::map<SgemmShape, int> counts;
  for (const SgemmShape& c : calls) ++counts[c];
  std::vector<ShapeTimer> timers;
  Rng rng{7, 0x6c696d6974};
  for (const auto& [shape, count] : counts) {
    ShapeTimer t;
    t.shape = shape;
    t.per_step = count;
    t.a.resize(static_cast<std::size_t>(shape.m) * shape.k);
    t.b.resize(static_cast<std::size_t>(shape.k) * shape.n);
    t.c.assign(static_cast<std::size_t>(shape.m) * shape.n, 0.0f);
    for (float& x : t.a) x = rng.uniform(-1.0f, 1.0f);
    for (float& x : t.b) x = rng.uniform(-1.0f, 1.0f);
    real_sgemm(shape, t.a.data(), t.b.data(), t.c.data());  // warm: pages, caches, OpenBLAS
    timers.push_back(std::move(t));
  }
  return timers;
}

// The layer shapes of a straight list, to derive its GEMM FLOPs independently of the probe.
struct LayerShapes {
  std::vector<std::unique_ptr<model::Layer>> layers;
  std::vector<model::SampleShape> shapes;  // shapes[i]: layer i's input; back(): the output
  std::size_t first_trainable = 0;
};

// Only straight lists (the layer above takes the output below): graphs skip the cross-check.
bool is_chain(const Config& config) {
  return model::wire_graph(config.layers()).chain();
}

LayerShapes layer_shapes(const Config& config, const Setup& s) {
  LayerShapes r;
  r.shapes.push_back(s.input);
  r.first_trainable = config.layers().size();
  for (const LayerSpec& spec : config.layers()) {
    r.layers.push_back(model::make_layer(spec));
    if (!r.layers.back()->param_layout(r.shapes.back()).empty() &&
        r.first_trainable == config.layers().size()) {
      r.first_trainable = r.layers.size() - 1;
    }
    r.shapes.push_back(r.layers.back()->output_shape(r.shapes.back()));
  }
  return r;
}

// One row of the breakdown: a layer's forward or backward (or the loss, or the optimiser).
struct Phase {
  Phase(std::string w, std::string p) : what(std::move(w)), phase(std::move(p)) {}
  std::string what, phase;
  std::vector<double> total, sgemm;  // seconds, one per step
  std::vector<SgemmShape> calls;     // as recorded in the first step
  Clock::time_point start;
};

void phase_begin(Phase& p) {
  if (p.total.empty()) sgemm_probe_record();
  sgemm_probe_reset_seconds();
  p.start = Clock::now();
}

void phase_end(Phase& p) {
  p.total.push_back(seconds_since(p.start));
  p.sgemm.push_back(sgemm_probe_seconds());
  if (p.total.size() == 1) p.calls = sgemm_probe_take();
}

// Clocks the real model's layer calls: phases[2i] / [2i+1] are layer i's forward / backward,
// then the loss and the optimiser.
class PhaseClock final : public model::LayerObserver {
 public:
  explicit PhaseClock(const model::Model& net) {
    for (std::size_t i = 0; i < net.specs().size(); ++i) {
      const std::string what = fmt::format("{} {}", i, net.describe(i));
      phases_.push_back(Phase{what, "forward"});
      phases_.push_back(Phase{what, "backward"});
    }
    phases_.push_back(Phase{"softmax cross-entropy", "loss"});
    phases_.push_back(Phase{"optimizer", "step"});
  }
  void begin(std::size_t index, bool backward) override { phase_begin(layer(index, backward)); }
  void end(std::size_t index, bool backward) override { phase_end(layer(index, backward)); }
  Phase& loss() { return phases_[phases_.size() - 2]; }
  Phase& optimizer() { return phases_.back(); }
  const std::vector<Phase>& phases() const { return phases_; }

 private:
  Phase& layer(std::size_t index, bool backward) { return phases_[2 * index + (backward ? 1 : 0)]; }
  std::vector<Phase> phases_;
};

// One training step as the CPU trainer runs it (train/compute_backend.cpp), less the sync:
// a training pass (batch statistics, dropout) of one trainer; clocked phase by phase when
// `clock` is given (it also watches the layers).
void model_step(Setup& s, PhaseClock* clock = nullptr) {
  const model::Pass pass{.training = true, .seed = s.seed, .step = s.steps++};
  const Tensor& logits = s.net->forward(s.images, pass);
  if (clock != nullptr) phase_begin(clock->loss());
  model::softmax_cross_entropy(logits, s.labels, 1.0f / static_cast<float>(s.batch),
                               &s.grad_logits);
  if (clock != nullptr) phase_end(clock->loss());
  s.net->backward(s.grad_logits);
  if (clock != nullptr) phase_begin(clock->optimizer());
  s.optimizer->step(s.net->params(), s.net->grads());
  if (clock != nullptr) phase_end(clock->optimizer());
}

}  // namespace

namespace {

// FLOPs of one step's GEMMs derived from the layer shapes alone (2 M N K per product: forward,
// weight gradient, and input gradient above the first trainable layer), to cross-check the
// recorded calls.
double derived_gemm_flops(const LayerShapes& r, int batch) {
  double flops = 0;
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    const std::string type = r.layers[i]->type();
    if (type != "conv2d" && type != "linear") continue;
    const std::vector<int> w = r.layers[i]->param_layout(r.shapes[i]).front().shape;
    double per_sample = 2.0 * static_cast<double>(Tensor::count_of(w));  // out * C k k or out * in
    if (type == "conv2d") per_sample *= r.shapes[i + 1][1] * r.shapes[i + 1][2];  // * H' W'
    flops += per_sample * batch * (i == r.first_trainable ? 2 : 3);
  }
  return flops;
}

// Seconds the GEMM-limit assigns to `calls`: each call at its shape's median time.
double limit_of(const std::vector<SgemmShape>& calls, const std::map<SgemmShape, double>& median) {
  double s = 0;
  for (const SgemmShape& c : calls) s += median.at(c);
  return s;
}

// Per round: the GEMM-limit step time and the median real step time; and the fastest step.
struct Rounds {
  std::vector<double> limit, step;
  double fastest_step = 0;
};

// Alternating rounds: every shape's block, then `steps` real steps.
Rounds measure_rounds(Setup& s, std::vector<ShapeTimer>& shapes, const Options& opt) {
  for (int i = 0; i < 2; ++i) model_step(s);  // warm-up
  Rounds r;
  r.fastest_step = 1e30;
  for (int round = 0; round < opt.rounds; ++round) {
    double total = 0;
    for (ShapeTimer& t : shapes) {
      t.time_block();
      total += t.per_call.back() * t.per_step;
    }
    std::vector<double> steps;
    for (int i = 0; i < opt.steps; ++i) {
      const auto start = Clock::now();
      model_step(s);
      steps.push_back(seconds_since(start));
      r.fastest_step = std::min(r.fastest_step, steps.back());
    }
    r.limit.push_back(total);
    r.step.push_back(median(steps));
  }
  return r;
}

void add_shape_table(Report& report, const std::vector<ShapeTimer>& shapes) {
  Table& t = report.add_table(Table(
      "shapes", "SGEMM shapes of one step, OpenBLAS alone (warm operands, median over rounds)",
      {"shape (op M x N x K)",
       "calls",
       {"GFLOP", 3},
       {"us/call", 1},
       {"GFLOP/s", 1},
       {"ms/step", 2}}));
  for (const ShapeTimer& s : shapes) {
    const double per_call = median(s.per_call);
    t.add_row({s.shape.describe(), s.per_step, s.shape.flops() * s.per_step * 1e-9, per_call * 1e6,
               s.shape.flops() / per_call * 1e-9, per_call * s.per_step * 1e3});
  }
  t.print();
}

// Breakdown table; returns the sum of the phases' median seconds.
double add_breakdown_table(Report& report, const std::vector<Phase>& phases,
                           const std::map<SgemmShape, double>& shape_median) {
  Table& t = report.add_table(
      Table("breakdown",
            "the step by layer and phase (median over steps): inside SGEMM, the rest "
            "(im2col/col2im, bias, elementwise, pooling), and the GEMM-limit of its SGEMM calls",
            {"layer",
             "phase",
             {"ms", 3},
             {"sgemm ms", 3},
             {"other ms", 3},
             {"limit ms", 3},
             "sgemm calls"}));
  double sum = 0;
  for (const Phase& p : phases) {
    if (p.total.empty()) continue;  // backward below the first trainable layer: never run
    const double total = median(p.total);
    const double inside = median(p.sgemm);
    sum += total;
    t.add_row({p.what, p.phase, total * 1e3, inside * 1e3, (total - inside) * 1e3,
               limit_of(p.calls, shape_median) * 1e3, static_cast<std::int64_t>(p.calls.size())});
  }
  t.print();
  return sum;
}

// The per-layer breakdown: the real model's steps, clocked layer by layer through a
// LayerObserver; the sum of its phases.
double breakdown(Setup& s, const Options& opt, Report& report,
                 const std::map<SgemmShape, double>& shape_median) {
  PhaseClock clock(*s.net);
  s.net->set_observer(&clock);
  sgemm_probe_clock(true);
  for (int i = 0; i < opt.rounds * opt.steps; ++i) model_step(s, &clock);
  sgemm_probe_clock(false);
  s.net->set_observer(nullptr);
  return add_breakdown_table(report, clock.phases(), shape_median);
}

// The SGEMM calls of one step in the im2col formulation: `s`'s own, or, when `s` runs
// oneDNN's convolutions, those of the same model built with im2col on the same batch (it
// takes the net's place for that step).
std::vector<SgemmShape> im2col_calls(const Config& config, const model::LayerOptions& options,
                                     Setup& s) {
  const bool swap = options.conv != model::ConvKernels::kIm2col;
  std::optional<model::Model> net;
  std::unique_ptr<model::Optimizer> optimizer;
  if (swap) {
    net = std::move(s.net);
    optimizer = std::move(s.optimizer);
    build_net(s, config, {});
  }
  sgemm_probe_record();
  model_step(s);
  std::vector<SgemmShape> calls = sgemm_probe_take();
  if (swap) {
    s.net = std::move(net);
    s.optimizer = std::move(optimizer);
  }
  return calls;
}

}  // namespace

int run_gemm_limit(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options opt;
  CommonOptions common;
  po::options_description desc("conflux-bench gemm-limit options (1 rank)");
  desc.add_options()("help,h", "show this help")(
      "config", po::value(&opt.config)->default_value(opt.config), "training config")(
      "set", po::value(&opt.overrides)->composing(), "config override KEY=VALUE (repeatable)")(
      "rounds", po::value(&opt.rounds)->default_value(opt.rounds),
      "alternating rounds of GEMM-alone and real-step timing")(
      "steps", po::value(&opt.steps)->default_value(opt.steps), "timed steps per round");
  const auto vm = parse_scenario_options("gemm-limit", args, desc, common, world);
  if (!vm) return 0;
  CONFLUX_REQUIRE(world.size() == 1, "gemm-limit runs on 1 rank, not {}", world.size());
  CONFLUX_REQUIRE(opt.rounds >= 1 && opt.steps >= 1, "gemm-limit: --rounds and --steps >= 1");
  const Config config = load_config_file(opt.config, environment_sources(opt.overrides, "bench"));
  openblas_set_num_threads(config.cluster().blas_threads);  // as the trainer does
  const model::LayerOptions options = train::layer_options(config);
  Setup s = make_setup(config, options);
  const std::vector<SgemmShape> calls = im2col_calls(config, options, s);
  double recorded_flops = 0;
  for (const SgemmShape& c : calls) recorded_flops += c.flops();
  if (is_chain(config)) {
    const double derived_flops = derived_gemm_flops(layer_shapes(config, s), s.batch);
    CONFLUX_CHECK(recorded_flops == derived_flops,
                  "gemm-limit: the step's SGEMM calls do {} FLOPs, the layer shapes say {}",
                  recorded_flops, derived_flops);
  }
  std::vector<ShapeTimer> shapes = make_shape_timers(calls);
  fmt::print(
      "gemm-limit: {}, batch {} of [{}] (synthetic, in memory: no data loading), 1 trainer, "
      "{} BLAS thread(s); {} SGEMM calls of {} shapes per step, {:.3f} GFLOP (= the layer "
      "shapes' count)\n",
      opt.config, s.batch, fmt::join(s.input, ","), config.cluster().blas_threads, calls.size(),
      shapes.size(), recorded_flops * 1e-9);
  fmt::print("conv2d kernels: {}\n\n",
             options.conv == model::ConvKernels::kOnednn
                 ? "oneDNN (the step's convolutions issue no SGEMM: their time is all 'other', "
                   "the GEMM-limit counts the im2col formulation's calls)"
                 : "im2col + OpenBLAS SGEMM");
  const Rounds rounds = measure_rounds(s, shapes, opt);
  const std::vector<double>& limit = rounds.limit;
  const std::vector<double>& step = rounds.step;
  std::map<SgemmShape, double> shape_median;
  double fastest_limit = 0;  // every shape at its fastest round
  for (const ShapeTimer& t : shapes) {
    shape_median[t.shape] = median(t.per_call);
    fastest_limit += *std::min_element(t.per_call.begin(), t.per_call.end()) * t.per_step;
  }

  Report report("gemm-limit", common);
  report.add_parameters(*vm);
  report.set_parameter("batch_size", s.batch);
  report.set_parameter("blas_threads", config.cluster().blas_threads);
  report.set_parameter("conv_kernels",
                       options.conv == model::ConvKernels::kOnednn ? "onednn" : "im2col");
  add_shape_table(report, shapes);
  fmt::print("\n");
  const double breakdown_s = breakdown(s, opt, report, shape_median);
  const std::vector<double> fractions = ratios(limit, step);
  const double fraction = median(fractions);
  fmt::print(
      "\nGEMM-limit step {:.2f} ms ({:.1f} GFLOP/s), measured step {:.2f} ms (breakdown sum "
      "{:.2f} ms): fraction {:.3f} {}; {:.0f} vs {:.0f} samples/s\n\n",
      median(limit) * 1e3, recorded_flops / median(limit) * 1e-9, median(step) * 1e3,
      breakdown_s * 1e3, fraction, per_round(fractions), s.batch / median(step),
      s.batch / median(limit));
  fmt::print(
      "fastest: GEMM-limit {:.2f} ms (every shape at its fastest round), step {:.2f} ms: "
      "fraction {:.3f} (less sensitive to other load on the machine)\n\n",
      fastest_limit * 1e3, rounds.fastest_step * 1e3, fastest_limit / rounds.fastest_step);
  report.set_summary("gemm_gflop_per_step", recorded_flops * 1e-9);
  report.set_summary("sgemm_calls_per_step", static_cast<std::int64_t>(calls.size()));
  report.set_summary("gemm_limit_step_ms", median(limit) * 1e3);
  report.set_summary("measured_step_ms", median(step) * 1e3);
  report.set_summary("breakdown_sum_ms", breakdown_s * 1e3);
  report.set_summary("fraction", fraction);
  report.set_summary("fraction_per_round", per_round(fractions));
  report.set_summary("fastest_gemm_limit_step_ms", fastest_limit * 1e3);
  report.set_summary("fastest_step_ms", rounds.fastest_step * 1e3);
  report.set_summary("fastest_fraction", fastest_limit / rounds.fastest_step);
  report.set_summary("samples_per_s", s.batch / median(step));
  report.set_summary("limit_samples_per_s", s.batch / median(limit));
  report.write();
  return 0;
}

}  // namespace conflux::bench
