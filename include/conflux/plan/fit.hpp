#pragma once
/// @file fit.hpp
/// Least-squares fit of the performance model from a profile: T_train(B, M) = a (B + b) /
/// (M + m) [+ c], T_trans(M) = k1 M^k2 and the measured gradient-sync table, with goodness of
/// fit, per-point errors and leave-one-out prediction errors.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "conflux/plan/performance_model.hpp"
#include "conflux/plan/sweep_data.hpp"

namespace conflux::plan {

/// How well one fitted form reproduces the points.
struct PointError {
  int workers = 1, memory_mb = 0, batch = 0;
  double measured_s = 0, predicted_s = 0;
  double relative_error = 0;  ///< (predicted - measured) / measured
  double loo_error = 0;       ///< the same, fitted without this point (leave-one-out)
};

/// Goodness of fit of one form.
struct FitQuality {
  double r2 = 0;                    ///< coefficient of determination on the times
  double rmse_s = 0;                ///< root mean square error, seconds
  double median_abs_error = 0;      ///< median |relative error|
  double max_abs_error = 0;         ///< largest |relative error|
  double loo_median_abs_error = 0;  ///< median |leave-one-out relative error|
  std::vector<PointError> points;
};

/// One fitted form of T_train.
struct TrainFit {
  std::string form;  ///< "a(B+b)/(M+m)" or "a(B+b)/(M+m) + c"
  TrainTimeModel model;
  FitQuality quality;
};

/// Which T_train form to keep.
enum class TrainForm {
  kAuto,      ///< FasDL's, unless the one with a constant is clearly better
  kFasdl,     ///< a (B + b) / (M + m)
  kConstant,  ///< a (B + b) / (M + m) + c
};

/// T_train (and T_c) at one further profiled thread count.
struct ThreadsFit {
  int threads = 1;
  TrainFit train;                   ///< in the form kept for the first thread count
  std::optional<TrainFit> compute;  ///< T_c there, when the profile timed builds
};

/// Everything the fit found.
struct FitResult {
  TrainFit fasdl;          ///< FasDL's form
  TrainFit with_constant;  ///< the alternative with a fixed per-iteration cost
  bool chose_constant = false;
  std::string choice;  ///< why the kept form was kept
  /// The fits at further thread counts (fasdl / with_constant hold the smallest count's)
  std::vector<ThreadsFit> more_threads;
  std::size_t beyond_share = 0;  ///< points above threads x mb_per_vcpu, left out of T_train
  FitQuality transfer_quality;
  /// T_c, the compute alone (the kept form, on the compute times); absent without builds
  std::optional<TrainFit> compute;
  std::vector<BuildPoint> builds;  ///< the measured build times P(B) was fitted to
  std::string input_note;          ///< why T_c or P(B) is absent (empty: both fitted)
  PerformanceModel model;          ///< the kept forms, ready for the cost model
};

/// Fits `profile` (a profile of GPU trainers with fit_gpu_sweep()); InputError when it cannot: too
/// few distinct memory sizes or batches, or a fit that does not converge (parameters at the edge of
/// their range, a ≤ 0), saying why.
FitResult fit_sweep(const Sweep& sweep, TrainForm form, const std::string& source);

/// Fits T_train = a (B + b) / (M + m) [+ c] to (B, M, seconds) points, minimising relative
/// errors; exposed for tests. InputError when it does not converge.
TrainTimeModel fit_train_time(const std::vector<SweepPoint>& points, bool with_constant);

/// A profile of GPU trainers: per batch the compute ceiling and the local input rate of its
/// single-trainer points, the measured sync of the others, P(B) from the builds.
FitResult fit_gpu_sweep(const Sweep& sweep, const std::string& source);

/// P(B) = p0 + p1 B from build times, least squares on relative errors with p0 >= 0 (one
/// batch size: through the origin).
InputCostModel fit_input_cost(const std::vector<BuildPoint>& builds);

/// Per trainer count and memory size, the sum and count of measured sync seconds.
using SyncSums = std::map<int, std::map<int, std::pair<double, int>>>;
/// The sync table of the means of `sums` (rows ascending in trainers, points in memory).
SyncTimeTable sync_table_of_means(const SyncSums& sums);

/// Fits T_trans = k1 M^k2 to (M, seconds); InputError with fewer than 2 memory sizes.
TransferTimeModel fit_transfer_time(const std::vector<SweepPoint>& points);

/// The fit report: both forms' coefficients, quality, per-point table and the choice (for GPU
/// trainers render_gpu_fit_report()).
std::string render_fit_report(const FitResult& fit);

/// The fit report of GPU trainers: rates per batch, their bottleneck alone, sync and P(B).
std::string render_gpu_fit_report(const FitResult& fit);

}  // namespace conflux::plan
