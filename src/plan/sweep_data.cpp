#include "conflux/plan/sweep_data.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <sstream>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/toml_file.hpp"

namespace conflux::plan {

void write_sweep(const std::filesystem::path& path, const Sweep& profile) {
  toml::table root{{"config_name", profile.config_name},
                   {"dataset", profile.dataset},
                   {"epoch_samples", static_cast<std::int64_t>(profile.epoch_samples)},
                   {"gradient_mb", profile.gradient_mb},
                   {"mb_per_vcpu", profile.mb_per_vcpu},
                   {"device", profile.device}};
  toml::array points;
  for (const SweepPoint& p : profile.points) {
    points.push_back(toml::table{{"workers", p.workers},
                                 {"memory_mb", p.memory_mb},
                                 {"batch", p.batch},
                                 {"threads", p.threads},
                                 {"steps", p.steps},
                                 {"iteration_s", p.iteration_s},
                                 {"compute_s", p.compute_s},
                                 {"sync_s", p.sync_s},
                                 {"transfer_s", p.transfer_s},
                                 {"cpu_share_used", p.cpu_share_used},
                                 {"out_of_memory", p.out_of_memory}});
  }
  root.insert("point", std::move(points));
  toml::array builds;
  for (const BuildPoint& b : profile.builds) {
    builds.push_back(
        toml::table{{"batch", b.batch}, {"batches", b.batches}, {"seconds", b.seconds}});
  }
  root.insert("build", std::move(builds));
  std::ostringstream out;
  out << "# conflux profile: per-iteration times measured under Lambda-like limits\n"
      << root << "\n";
  publish_text_file(path, out.str());
}

Sweep read_sweep(const std::filesystem::path& path) {
  const std::string name = path.string();
  const toml::table root = parse_toml_file(path);
  Sweep profile;
  profile.config_name = root["config_name"].value_or(std::string{});
  profile.dataset = root["dataset"].value_or(std::string{});
  profile.epoch_samples = static_cast<std::uint64_t>(toml_number(root, "epoch_samples", name));
  profile.gradient_mb = toml_number(root, "gradient_mb", name);
  profile.mb_per_vcpu = toml_number(root, "mb_per_vcpu", name);
  profile.device = root["device"].value_or(std::string("cpu"));  // absent: an older profile
  CONFLUX_REQUIRE(profile.device == "cpu" || profile.device == "gpu",
                  "{}: device must be \"cpu\" or \"gpu\", not \"{}\"", name, profile.device);
  for (const toml::table* t : toml_tables(root, "point", name)) {
    SweepPoint p;
    p.workers = static_cast<int>(toml_number(*t, "workers", name));
    p.memory_mb = static_cast<int>(toml_number(*t, "memory_mb", name));
    p.batch = static_cast<int>(toml_number(*t, "batch", name));
    p.steps = static_cast<int>(toml_number(*t, "steps", name));
    p.threads = static_cast<int>((*t)["threads"].value_or(std::int64_t{0}));
    p.iteration_s = toml_number(*t, "iteration_s", name);
    p.compute_s = toml_number(*t, "compute_s", name);
    p.sync_s = toml_number(*t, "sync_s", name);
    p.transfer_s = toml_number(*t, "transfer_s", name);
    p.cpu_share_used = (*t)["cpu_share_used"].value_or(0.0);
    p.out_of_memory = (*t)["out_of_memory"].value_or(false);
    CONFLUX_REQUIRE(p.workers >= 1 && p.memory_mb > 0 && p.batch > 0 && p.threads >= 0 &&
                        (p.out_of_memory || p.iteration_s > 0),
                    "{}:{}:{}: point with workers = {}, memory_mb = {}, batch = {}, "
                    "iteration_s = {} is not a valid measurement",
                    name, t->source().begin.line, t->source().begin.column, p.workers, p.memory_mb,
                    p.batch, p.iteration_s);
    profile.points.push_back(p);
  }
  // Absent in profiles of an older `conflux profile`: the fit then prices no data workers.
  for (const toml::table* t : toml_tables(root, "build", name)) {
    BuildPoint b;
    b.batch = static_cast<int>(toml_number(*t, "batch", name));
    b.batches = static_cast<int>(toml_number(*t, "batches", name));
    b.seconds = toml_number(*t, "seconds", name);
    CONFLUX_REQUIRE(b.batch > 0 && b.batches > 0 && b.seconds > 0,
                    "{}:{}:{}: [[build]] with batch = {}, batches = {}, seconds = {} is not a "
                    "valid measurement",
                    name, t->source().begin.line, t->source().begin.column, b.batch, b.batches,
                    b.seconds);
    profile.builds.push_back(b);
  }
  std::size_t usable = 0;
  for (const auto& p : profile.points) usable += p.out_of_memory ? 0 : 1;
  CONFLUX_REQUIRE(usable > 0,
                  "{}: the profile holds no measured point (run `conflux profile` with a grid "
                  "of --memory and --batch values first)",
                  name);
  return profile;
}

Sweep merge_sweeps(const std::vector<Sweep>& profiles, const std::vector<std::string>& names) {
  CONFLUX_REQUIRE(!profiles.empty(), "no profile given (--profile FILE)");
  Sweep merged = profiles.front();
  for (std::size_t i = 1; i < profiles.size(); ++i) {
    const Sweep& p = profiles[i];
    CONFLUX_REQUIRE(p.dataset == merged.dataset && p.epoch_samples == merged.epoch_samples &&
                        p.gradient_mb == merged.gradient_mb && p.mb_per_vcpu == merged.mb_per_vcpu,
                    "{} profiles another config ({} with {} samples, {:.3f} MB of parameters) "
                    "than {} ({} with {} samples, {:.3f} MB)",
                    names[i], p.dataset, p.epoch_samples, p.gradient_mb, names[0], merged.dataset,
                    merged.epoch_samples, merged.gradient_mb);
    CONFLUX_REQUIRE(p.device == merged.device,
                    "{} profiles {} trainers, {} {} trainers: a model describes one kind", names[i],
                    p.device, names[0], merged.device);
    merged.points.insert(merged.points.end(), p.points.begin(), p.points.end());
    merged.builds.insert(merged.builds.end(), p.builds.begin(), p.builds.end());
  }
  return merged;
}

}  // namespace conflux::plan
