// conflux-bench scale-model: docs/scaling.md's model, computed from measured parameters. It
// reads what other scenarios measured (their --json files): alpha, beta and gamma between two
// hosts and within one (tcp), the allreduce times at a few rank counts (grad-sync, the check),
// and the data service's rates (offload, trainer and workers on separate hosts). It predicts
// the gradient allreduce as Open MPI's libnbc runs it for conflux's in-place MPI_Iallreduce
// (binomial tree; ring and Rabenseifner for comparison), checks the prediction against each
// grad-sync file, projects to --max-ranks, and derives the data service's fan-in and request
// credits and the first limits of the design. Arithmetic only: it measures nothing itself.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "conflux/core/error.hpp"
#include "conflux/core/json_reader.hpp"
#include "report.hpp"
#include "scale_model.hpp"
#include "scenarios.hpp"

namespace conflux::bench {

namespace po = boost::program_options;
using scale::Machine;

namespace {

struct Options {
  std::string tcp, shm, offload;
  std::vector<std::string> checks;
  long max_ranks = 4096;
  int per_host = 1;
  double ratio = 0.5;
  std::string audit_samples = "60000,1281167,14197122,100000000";
  double timeline_events = 200000;  // profile.timeline_max_events' default
  double event_bytes = 0;
};

JsonValue read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CONFLUX_REQUIRE(in.good(), "scale-model: cannot read {}", path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_json(text.str(), path);
}

double summary(const JsonValue& j, const std::string& key, const std::string& path) {
  const JsonValue* s = j.find("summary");
  const double v = s == nullptr ? NAN : s->number_or(key, NAN);
  CONFLUX_REQUIRE(std::isfinite(v), "scale-model: {} has no summary figure '{}'", path, key);
  return v;
}

const JsonValue::Array& rows(const JsonValue& j, const std::string& id, const std::string& path) {
  const JsonValue* tables = j.find("tables");
  if (tables != nullptr && tables->is_array()) {
    for (const JsonValue& t : tables->as_array()) {
      if (t.string_or("id", "") == id && t.find("rows") != nullptr) {
        return t.find("rows")->as_array();
      }
    }
  }
  CONFLUX_INPUT_ERROR("scale-model: {} has no table '{}'", path, id);
}

double parameter(const JsonValue& j, const std::string& key, const std::string& path) {
  const JsonValue* p = j.find("parameters");
  const double v = p == nullptr ? NAN : p->number_or(key, NAN);
  CONFLUX_REQUIRE(std::isfinite(v), "scale-model: {} has no parameter '{}'", path, key);
  return v;
}

scale::Link link_of(const JsonValue& tcp, const std::string& path) {
  return {1e-6 * summary(tcp, "alpha_us", path), 1e-9 * summary(tcp, "beta_ns_per_byte", path)};
}

// The gradient buffers of the check files' models: name and bytes.
using Gradients = std::vector<std::pair<std::string, double>>;

// Predicted against measured for every row of one grad-sync file.
void check_file(const std::string& path, Machine m, Table& table, Gradients& gradients,
                std::vector<double>& errors) {
  const JsonValue j = read_json(path);
  const long p = std::lround(parameter(j, "ranks", path));
  m.per_host = static_cast<int>(std::lround(parameter(j, "ranks_per_host", path)));
  for (const JsonValue& row : rows(j, "allreduce", path)) {
    const std::string buffer = row.string_or("buffer", "");
    const double bytes = row.number_or("bytes", NAN);
    const double measured_us = row.number_or("median us", NAN);
    CONFLUX_REQUIRE(std::isfinite(bytes) && std::isfinite(measured_us),
                    "scale-model: {}: an allreduce row lacks bytes or median us", path);
    const double predicted_us = 1e6 * scale::binomial_s(p, bytes, m);
    const double error = 100 * (predicted_us - measured_us) / measured_us;
    errors.push_back(std::abs(error));
    table.add_row({p, m.per_host, buffer, static_cast<std::int64_t>(bytes), measured_us,
                   predicted_us, error, 1e6 * scale::ring_s(p, bytes, m)});
    if (buffer.rfind("model ", 0) == 0 &&
        std::none_of(gradients.begin(), gradients.end(),
                     [&](const auto& g) { return g.first == buffer.substr(6); })) {
      gradients.emplace_back(buffer.substr(6), bytes);
    }
  }
}

void project(const Machine& m, const Gradients& gradients, const Options& opt, Report& report) {
  Table& table = report.add_table(
      Table("projection",
            fmt::format("gradient allreduce projected to {} ranks, {} rank(s) per host (ms)",
                        opt.max_ranks, opt.per_host),
            {"gradient", "ranks", {"binomial (runs today)", 2}, {"ring", 2}, {"rabenseifner", 2}}));
  Machine at = m;
  at.per_host = opt.per_host;
  for (const auto& [name, bytes] : gradients) {
    for (long p = 2; p <= opt.max_ranks; p *= 2) {
      table.add_row({fmt::format("{} ({:.0f} KiB)", name, bytes / 1024), p,
                     1e3 * scale::binomial_s(p, bytes, at), 1e3 * scale::ring_s(p, bytes, at),
                     1e3 * scale::rabenseifner_s(p, bytes, at)});
    }
    report.set_summary(name + "_binomial_ms_at_max",
                       1e3 * scale::binomial_s(opt.max_ranks, bytes, at));
    report.set_summary(name + "_rabenseifner_ms_at_max",
                       1e3 * scale::rabenseifner_s(opt.max_ranks, bytes, at));
  }
  table.print();
  fmt::print("\n");
}

// The additive model checked against the offload file's rows: W workers deliver W times one
// worker's rate, each up to its own link's rate, and together up to the trainer's ceiling. (On
// a real cluster the trainer's own link caps the sum too; on the simulated one each stream is a
// copy by its own sender's core, so W streams are not held to one stream's beta.)
void service_check(const JsonValue::Array& r, const scale::Service& s, const Machine& m,
                   Report& report) {
  Table& check = report.add_table(
      Table("service_check",
            "workers only (ratio 1): W x min(1-worker rate, link rate), capped, vs measured",
            {"workers", {"measured", 0}, {"predicted", 0}, {"error %", 1}}));
  const double link_cap = 1 / (s.sample_bytes * m.net.beta_s_per_byte);
  for (const JsonValue& row : r) {
    const double w = row.number_or("workers", NAN);
    const double measured = row.number_or("workers only", NAN);
    const double predicted =
        std::min({w * s.worker_samples_per_s, w * link_cap, row.number_or("compute cap", NAN)});
    check.add_row({static_cast<std::int64_t>(w), measured, predicted,
                   100 * (predicted - measured) / measured});
  }
  check.print();
  fmt::print("\n");
}

// The data service from the offload file's 1-worker row (trainer and worker on two hosts).
void service(const std::string& path, const Machine& m, const Options& opt, Report& report) {
  const JsonValue j = read_json(path);
  const auto& r = rows(j, "input_bound", path);
  CONFLUX_REQUIRE(!r.empty(), "scale-model: {}: the input_bound table is empty", path);
  const double side = parameter(j, "resolution", path);
  scale::Service s{.worker_samples_per_s = r.front().number_or("workers only", NAN),
                   .trainer_samples_per_s = r.front().number_or("compute cap", NAN),
                   .ratio = opt.ratio,
                   .batch = parameter(j, "batch", path),
                   .sample_bytes = 3 * side * side * sizeof(float)};  // heavy path: floats
  CONFLUX_REQUIRE(std::isfinite(s.worker_samples_per_s) && std::isfinite(s.trainer_samples_per_s),
                  "scale-model: {}: the 1-worker row lacks 'workers only' or 'compute cap'", path);
  Table& table = report.add_table(Table(
      "service",
      fmt::format("data service: 1 worker {:.0f} samples/s, trainer ceiling {:.0f} samples/s, "
                  "batch {:.0f} x {:.0f} KiB, offload ratio {}",
                  s.worker_samples_per_s, s.trainer_samples_per_s, s.batch, s.sample_bytes / 1024,
                  s.ratio),
      {"quantity", {"value", 2}, "from"}));
  table.add_row({"trainers one worker feeds (CPU)", scale::fan_in_cpu(s),
                 "worker samples/s / (ratio x trainer samples/s)"});
  table.add_row({"trainers one worker's link feeds", scale::fan_in_link(s, m.net),
                 "1 / (sample bytes x beta) / (ratio x trainer samples/s)"});
  table.add_row({"workers one trainer needs", 1 / scale::fan_in_cpu(s), "inverse of the above"});
  table.add_row({"request round trip, ms", 1e3 * scale::request_round_trip_s(s, m.net),
                 "alpha + build + (1 + chunks) alpha + payload x beta"});
  table.add_row({"requests a trainer keeps in flight", scale::requests_in_flight(s, m.net),
                 "ceil(remote batches/s x round trip); <= data.prefetch_batches"});
  table.add_row({"requests waiting at a worker", scale::worker_requests_needed(s, m.net),
                 "1 + ceil((round trip - build) / build), shared by its trainers' credits"});
  table.print();
  fmt::print("\n");
  service_check(r, s, m, report);
  report.set_summary("fan_in_cpu", scale::fan_in_cpu(s));
  report.set_summary("requests_in_flight", scale::requests_in_flight(s, m.net));
}

// The audit's per-sample counts (one double each, plus 2) summed over the trainers, and the
// timeline's fragments gathered by rank 0 (MPI counts stop at 2 GiB).
void limits(const Machine& m, const Options& opt, Report& report) {
  Machine at = m;
  at.per_host = opt.per_host;
  Table& table = report.add_table(
      Table("limits", fmt::format("limits at {} ranks, {} per host", opt.max_ranks, opt.per_host),
            {"what", {"bytes per rank", 0}, {"seconds", 3}, "note"}));
  std::stringstream in(opt.audit_samples);
  for (std::string item; std::getline(in, item, ',');) {
    const double bytes = 8 * (std::stod(item) + 2);
    table.add_row({fmt::format("audit allreduce, {} samples", item), bytes,
                   scale::binomial_s(opt.max_ranks, bytes, at),
                   fmt::format("binomial; rabenseifner {:.3f} s",
                               scale::rabenseifner_s(opt.max_ranks, bytes, at))});
  }
  if (opt.event_bytes > 0) {
    const double per_rank = opt.timeline_events * opt.event_bytes;
    const double total = per_rank * static_cast<double>(opt.max_ranks);
    table.add_row({fmt::format("timeline merge, {:.0f} events/rank", opt.timeline_events), per_rank,
                   total * m.net.beta_s_per_byte,
                   fmt::format("rank 0 receives {:.1f} GiB; the gather's 2 GiB limit is reached "
                               "at {:.0f} ranks",
                               total / (1 << 30), std::floor((1u << 31) / per_rank))});
  }
  table.print();
  fmt::print("\n");
}

}  // namespace

int run_scale_model(const std::vector<std::string>& args, const comm::Communicator& world) {
  Options opt;
  CommonOptions common;
  po::options_description desc("conflux-bench scale-model options (1 rank; reads --json files)");
  desc.add_options()("help,h", "show this help")(
      "tcp", po::value(&opt.tcp),
      "conflux-bench tcp --json between two hosts (alpha, beta, gamma)")(
      "shm", po::value(&opt.shm),
      "conflux-bench tcp --json with both ranks on one host (alpha, beta within a host)")(
      "check", po::value(&opt.checks)->composing(),
      "conflux-bench grad-sync --json to check the prediction against (repeatable)")(
      "offload", po::value(&opt.offload),
      "conflux-bench offload --json with the trainer and each worker on its own host")(
      "max-ranks", po::value(&opt.max_ranks)->default_value(opt.max_ranks),
      "largest rank count projected")("ranks-per-host",
                                      po::value(&opt.per_host)->default_value(opt.per_host),
                                      "ranks per host in the projections")(
      "ratio", po::value(&opt.ratio)->default_value(opt.ratio), "offload ratio of the fan-in")(
      "audit-samples", po::value(&opt.audit_samples)->default_value(opt.audit_samples),
      "dataset sizes of the audit's allreduce, comma-separated")(
      "timeline-events", po::value(&opt.timeline_events)->default_value(opt.timeline_events),
      "timeline events per rank (profile.timeline_max_events)")(
      "event-bytes", po::value(&opt.event_bytes)->default_value(opt.event_bytes),
      "measured bytes of one merged timeline event (0: no timeline row)");
  const auto vm = parse_scenario_options("scale-model", args, desc, common, world);
  if (!vm) return 0;
  CONFLUX_REQUIRE(!opt.tcp.empty(), "scale-model: --tcp FILE is needed (alpha, beta, gamma)");
  CONFLUX_REQUIRE(opt.max_ranks >= 2 && opt.per_host >= 1 && opt.ratio > 0 && opt.ratio <= 1,
                  "scale-model: --max-ranks >= 2, --ranks-per-host >= 1 and 0 < --ratio <= 1");
  if (world.rank() != 0) return 0;
  const JsonValue tcp = read_json(opt.tcp);
  Machine m;
  m.net = link_of(tcp, opt.tcp);
  m.shm = opt.shm.empty() ? m.net : link_of(read_json(opt.shm), opt.shm);
  m.gamma_s_per_byte = 1e-9 * summary(tcp, "gamma_ns_per_byte", opt.tcp);
  Report report("scale-model", common);
  report.add_parameters(*vm);
  Table& params = report.add_table(Table("parameters", "measured parameters",
                                         {"link", {"alpha us", 2}, {"beta ns/B", 3}, "file"}));
  params.add_row({"between hosts", 1e6 * m.net.alpha_s, 1e9 * m.net.beta_s_per_byte, opt.tcp});
  params.add_row({"within a host", 1e6 * m.shm.alpha_s, 1e9 * m.shm.beta_s_per_byte,
                  opt.shm.empty() ? "(as between hosts)" : opt.shm});
  params.add_row({"reduction (gamma)", 0.0, 1e9 * m.gamma_s_per_byte, opt.tcp});
  params.print();
  fmt::print("\n");

  Gradients gradients;
  std::vector<double> errors;
  Table& check = report.add_table(
      Table("check",
            "binomial model (what libnbc runs in place) against grad-sync's measured median "
            "(us); ring: the ring's prediction, for comparison",
            {"ranks",
             "per host",
             "buffer",
             "bytes",
             {"measured", 1},
             {"predicted", 1},
             {"error %", 1},
             {"ring", 1}}));
  for (const std::string& path : opt.checks) check_file(path, m, check, gradients, errors);
  if (!errors.empty()) {
    check.print();
    std::sort(errors.begin(), errors.end());
    fmt::print("median |error| {:.1f} % over {} rows\n\n", errors[errors.size() / 2],
               errors.size());
    report.set_summary("check_median_abs_error_pct", errors[errors.size() / 2]);
  }
  if (!gradients.empty()) project(m, gradients, opt, report);
  if (!opt.offload.empty()) service(opt.offload, m, opt, report);
  limits(m, opt, report);
  report.write();
  return 0;
}

}  // namespace conflux::bench
