#include "conflux/plan/performance_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "conflux/core/error.hpp"

namespace conflux::plan {

std::vector<int> PerformanceModel::measured_threads() const {
  std::vector<int> out;
  if (train_threads > 0) out.push_back(train_threads);
  for (const ThreadCountFit& f : more_threads) out.push_back(f.threads);
  return out;
}

const TrainTimeModel& PerformanceModel::train_at(int threads) const {
  for (const ThreadCountFit& f : more_threads) {
    if (f.threads == threads) return f.train;
  }
  return train;
}

const TrainTimeModel& PerformanceModel::compute_at(int threads) const {
  for (const ThreadCountFit& f : more_threads) {
    if (f.threads == threads) return f.compute;
  }
  return compute;
}

const GpuRate* GpuTrainerModel::at(int batch) const {
  const auto it = std::find_if(rates.begin(), rates.end(),
                               [batch](const GpuRate& r) { return r.batch == batch; });
  return it == rates.end() ? nullptr : &*it;
}

double TransferTimeModel::seconds(double memory_mb) const {
  return k1 * std::pow(memory_mb, k2);
}

double SyncTimeTable::seconds(int workers, double memory_mb) const {
  // One trainer has nobody to synchronise with, whether or not a row says so.
  if (workers == 1) return 0;
  const auto row = std::find_if(rows.begin(), rows.end(),
                                [workers](const Row& r) { return r.workers == workers; });
  if (row == rows.end()) {
    std::string measured;
    for (const Row& r : rows)
      measured += fmt::format("{}{}", measured.empty() ? "" : ", ", r.workers);
    CONFLUX_INPUT_ERROR(
        "no gradient-sync time was measured for {} trainers (measured: {}); the model does not "
        "extrapolate over the trainer count, so profile that count or plan over the measured ones",
        workers, measured.empty() ? "none" : measured);
  }
  const std::vector<double>& x = row->memory_mb;
  const std::vector<double>& y = row->seconds;
  CONFLUX_REQUIRE(!x.empty() && x.size() == y.size(),
                  "sync-time row for {} trainers has {} memory sizes and {} times; it needs at "
                  "least one point and equally many of each",
                  workers, x.size(), y.size());
  // Clamped outside the measured range: beyond the last size more memory buys no faster
  // network, and below the first nothing was measured.
  if (memory_mb <= x.front()) return y.front();
  if (memory_mb >= x.back()) return y.back();
  const auto hi =
      static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), memory_mb) - x.begin());
  const std::size_t lo = hi - 1;
  const double t = (memory_mb - x[lo]) / (x[hi] - x[lo]);
  // (1 - t) y0 + t y1 rather than y0 + t (y1 - y0): exact at both end points.
  return (1 - t) * y[lo] + t * y[hi];
}

int SyncTimeTable::max_workers() const {
  int most = 1;
  for (const Row& r : rows) most = std::max(most, r.workers);
  return most;
}

}  // namespace conflux::plan
