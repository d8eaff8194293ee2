#include "conflux/plan/fit_file.hpp"

#include <toml++/toml.h>

#include <sstream>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/toml_file.hpp"

namespace conflux::plan {
namespace {

const toml::table& table_at(const toml::table& root, std::string_view key,
                            const std::string& where) {
  const toml::table* t = root[key].as_table();
  if (t == nullptr) CONFLUX_INPUT_ERROR("{}: missing table [{}]", where, key);
  return *t;
}

toml::table coefficients(const TrainTimeModel& t) {
  return toml::table{{"a", t.a}, {"b", t.b}, {"m", t.m}, {"c", t.c}};
}

TrainTimeModel coefficients_of(const toml::table& t, const std::string& where) {
  return {toml_number(t, "a", where), toml_number(t, "b", where), toml_number(t, "m", where),
          toml_number(t, "c", where)};
}

toml::array doubles(const std::vector<double>& values) {
  toml::array out;
  for (double v : values) out.push_back(v);
  return out;
}

// [[more_threads]]: T_train (and T_c) at further profiled thread counts, ascending.
void read_more_threads(const toml::table& root, const std::string& name, PerformanceModel& m) {
  const std::vector<const toml::table*> more = toml_tables(root, "more_threads", name);
  CONFLUX_REQUIRE(more.empty() || m.train_threads > 0,
                  "{}: [[more_threads]] needs train_threads (the thread count of [train])", name);
  for (const toml::table* t : more) {
    ThreadCountFit f;
    f.threads = static_cast<int>(toml_number(*t, "threads", name));
    f.train = coefficients_of(table_at(*t, "train", name), name);
    if (const toml::table* c = (*t)["compute"].as_table()) f.compute = coefficients_of(*c, name);
    const int previous = m.more_threads.empty() ? m.train_threads : m.more_threads.back().threads;
    CONFLUX_REQUIRE(f.threads > previous && f.train.a > 0,
                    "{}:{}: [[more_threads]] needs thread counts above train_threads, ascending, "
                    "and train.a > 0; got threads = {} after {}",
                    name, t->source().begin.line, f.threads, previous);
    m.more_threads.push_back(f);
  }
}

// [[gpu]]: a GPU trainer's compute ceiling and local input rate per batch, ascending.
void read_gpu_rates(const toml::table& root, const std::string& name, PerformanceModel& m) {
  for (const toml::table* t : toml_tables(root, "gpu", name)) {
    GpuRate r;
    r.batch = static_cast<int>(toml_number(*t, "batch", name));
    r.ceiling_samples_s = toml_number(*t, "ceiling_samples_s", name);
    r.local_samples_s = toml_number(*t, "local_samples_s", name);
    const int previous = m.gpu.rates.empty() ? 0 : m.gpu.rates.back().batch;
    CONFLUX_REQUIRE(r.batch > previous && r.ceiling_samples_s > 0 && r.local_samples_s > 0,
                    "{}:{}: [[gpu]] needs batches ascending from 1, ceiling_samples_s > 0 and "
                    "local_samples_s > 0; got batch = {} after {}, {} and {}",
                    name, t->source().begin.line, r.batch, previous, r.ceiling_samples_s,
                    r.local_samples_s);
    m.gpu.rates.push_back(r);
  }
}

// [[sync]]: the measured sync time per trainer count, interpolated in M.
void read_sync(const toml::table& root, const std::string& name, PerformanceModel& m) {
  for (const toml::table* t : toml_tables(root, "sync", name)) {
    SyncTimeTable::Row row;
    row.workers = static_cast<int>(toml_number(*t, "workers", name));
    for (const char* key : {"memory_mb", "seconds"}) {
      const toml::array* values = (*t)[key].as_array();
      CONFLUX_REQUIRE(values != nullptr, "{}:{}: [[sync]] needs a list '{}'", name,
                      t->source().begin.line, key);
      auto& out = std::string_view(key) == "memory_mb" ? row.memory_mb : row.seconds;
      for (const toml::node& v : *values) out.push_back(v.value_or(0.0));
    }
    CONFLUX_REQUIRE(row.memory_mb.size() == row.seconds.size() && !row.seconds.empty() &&
                        std::is_sorted(row.memory_mb.begin(), row.memory_mb.end()),
                    "{}:{}: [[sync]] memory_mb and seconds must be equally long, non-empty and "
                    "memory_mb ascending",
                    name, t->source().begin.line);
    m.sync.rows.push_back(std::move(row));
  }
}

// [input] and [compute]: P(B) and T_c, which price data workers (absent in files of an older
// `conflux fit`; a model of GPU trainers has P(B) alone).
void read_input(const toml::table& root, const std::string& name, PerformanceModel& m) {
  // A model of GPU trainers: T_train and T_c do not apply; P(B) prices the data workers.
  if (m.gpu.present()) {
    if (const toml::table* input = root["input"].as_table()) {
      m.input = {toml_number(*input, "p0", name), toml_number(*input, "p1", name)};
      CONFLUX_REQUIRE(m.input.p1 > 0 && m.input.p0 >= 0,
                      "{}: [input] needs p1 > 0 and p0 >= 0, got {} and {}", name, m.input.p1,
                      m.input.p0);
    }
  }
  // Both absent in files of an older `conflux fit`: the planner then prices no data workers.
  if (const toml::table* compute = root["compute"].as_table(); compute && !m.gpu.present()) {
    m.compute = coefficients_of(*compute, name);
    const toml::table& input = table_at(root, "input", name);
    m.input = {toml_number(input, "p0", name), toml_number(input, "p1", name)};
    for (const ThreadCountFit& f : m.more_threads) {
      CONFLUX_REQUIRE(f.compute.a > 0, "{}: [[more_threads]] at {} threads needs compute.a > 0",
                      name, f.threads);
    }
    CONFLUX_REQUIRE(m.prices_input() && m.input.p0 >= 0,
                    "{}: [compute] and [input] need compute.a > 0, input.p1 > 0 and input.p0 >= "
                    "0, got {}, {} and {}",
                    name, m.compute.a, m.input.p1, m.input.p0);
  }
}

}  // namespace

void write_fit_file(const std::filesystem::path& path, const PerformanceModel& m) {
  toml::table root{{"dataset", m.dataset},
                   {"source", m.source},
                   {"epoch_samples", static_cast<std::int64_t>(m.epoch_samples)},
                   {"gradient_mb", m.gradient_mb},
                   {"mb_per_vcpu", m.mb_per_vcpu}};
  // GPU trainers are described by their rates ([[gpu]]), not by T_train and T_trans.
  if (!m.gpu.present()) root.insert("train", coefficients(m.train));
  if (m.train_threads > 0) root.insert("train_threads", m.train_threads);
  toml::array more;
  for (const ThreadCountFit& f : m.more_threads) {
    toml::table t{{"threads", f.threads}, {"train", coefficients(f.train)}};
    if (m.prices_input()) t.insert("compute", coefficients(f.compute));
    more.push_back(std::move(t));
  }
  if (!more.empty()) root.insert("more_threads", std::move(more));
  if (!m.gpu.present()) {
    root.insert("transfer", toml::table{{"k1", m.transfer.k1}, {"k2", m.transfer.k2}});
  }
  if (m.prices_input() && !m.gpu.present()) {
    root.insert(
        "compute",
        toml::table{
            {"a", m.compute.a}, {"b", m.compute.b}, {"m", m.compute.m}, {"c", m.compute.c}});
  }
  if (m.prices_input()) root.insert("input", toml::table{{"p0", m.input.p0}, {"p1", m.input.p1}});
  toml::array rows;
  for (const auto& row : m.sync.rows) {
    rows.push_back(toml::table{{"workers", row.workers},
                               {"memory_mb", doubles(row.memory_mb)},
                               {"seconds", doubles(row.seconds)}});
  }
  root.insert("sync", std::move(rows));
  toml::array gpu;
  for (const GpuRate& r : m.gpu.rates) {
    gpu.push_back(toml::table{{"batch", r.batch},
                              {"ceiling_samples_s", r.ceiling_samples_s},
                              {"local_samples_s", r.local_samples_s}});
  }
  if (!gpu.empty()) root.insert("gpu", std::move(gpu));
  root.insert("validation", toml::table{{"train_loo_errors", doubles(m.train_loo_errors)}});
  std::ostringstream out;
  out << "# conflux performance model: T_train(B, M) = a (B + b) / (M + m) + c,\n"
      << "# T_trans(M) = k1 M^k2, gradient sync interpolated in M per trainer count;\n"
      << "# T_c(B, M) (compute alone) as T_train, P(B) = p0 + p1 B (one batch, one thread);\n"
      << "# [[gpu]]: GPU trainers' compute ceiling and local input rate per batch (samples/s)\n"
      << root << "\n";
  publish_text_file(path, out.str());
}

PerformanceModel read_fit_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  const toml::table root = parse_toml_file(path);
  PerformanceModel m;
  m.dataset = root["dataset"].value_or(std::string{});
  m.source = root["source"].value_or(name);  // a hand-written model: named by its file
  m.epoch_samples = static_cast<std::uint64_t>(toml_number(root, "epoch_samples", name));
  m.gradient_mb = toml_number(root, "gradient_mb", name);
  m.mb_per_vcpu = toml_number(root, "mb_per_vcpu", name);
  read_gpu_rates(root, name, m);
  // GPU trainers are not modelled by T_train and T_trans: optional there.
  if (!m.gpu.present() || root.contains("train")) {
    m.train = coefficients_of(table_at(root, "train", name), name);
  }
  m.train_threads = static_cast<int>(root["train_threads"].value_or(std::int64_t{0}));
  read_more_threads(root, name, m);
  if (!m.gpu.present() || root.contains("transfer")) {
    const toml::table& transfer = table_at(root, "transfer", name);
    m.transfer = {toml_number(transfer, "k1", name), toml_number(transfer, "k2", name)};
  }
  read_sync(root, name, m);
  read_input(root, name, m);
  // Absent in files of an older `conflux fit`: the planner then has no margin to derive.
  if (const toml::array* errors = root.at_path("validation.train_loo_errors").as_array()) {
    for (const toml::node& v : *errors) {
      CONFLUX_REQUIRE(v.is_number(), "{}: validation.train_loo_errors must hold numbers", name);
      m.train_loo_errors.push_back(v.value_or(0.0));
    }
  }
  CONFLUX_REQUIRE((m.train.a > 0 || m.gpu.present()) && m.epoch_samples > 0,
                  "{}: not a fitted model (train.a = {} without [[gpu]] rates, epoch_samples = {})",
                  name, m.train.a, m.epoch_samples);
  return m;
}

}  // namespace conflux::plan
