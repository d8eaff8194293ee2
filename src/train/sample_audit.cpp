#include "conflux/train/sample_audit.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "conflux/core/error.hpp"

namespace conflux::train {

SampleAudit::SampleAudit(std::size_t dataset_size, const std::filesystem::path& csv_file,
                         bool resumed)
    : counts_(dataset_size, 0.0),
      csv_(csv_file, resumed ? std::ios::app : std::ios::trunc),
      csv_path_(csv_file) {
  CONFLUX_CHECK(csv_.good(), "audit: cannot write {}", csv_file.string());
  if (!resumed) csv_ << "epoch,step,origin,worker,samples\n";
}

void SampleAudit::add_counts(std::span<const double> counts) {
  CONFLUX_CHECK(counts.size() == counts_.size(),
                "audit: the checkpoint counted {} samples, the dataset has {}", counts.size(),
                counts_.size());
  for (std::size_t i = 0; i < counts.size(); ++i) counts_[i] += counts[i];
}

void SampleAudit::discard_epoch() {
  std::fill(counts_.begin(), counts_.end(), 0.0);
  batches_ = 0;
  skipped_ = 0;
}

void SampleAudit::record(const data::Batch& batch) {
  csv_ << batch.epoch << ',' << batch.step << ',' << data::origin_name(batch.origin) << ','
       << batch.worker << ',';
  for (std::size_t i = 0; i < batch.samples.size(); ++i) {
    const std::uint32_t s = batch.samples[i];
    CONFLUX_CHECK(s < counts_.size(), "audit: batch {}/{} holds sample {} of a {}-sample dataset",
                  batch.epoch, batch.step, s, counts_.size());
    counts_[s] += 1;
    csv_ << (i ? " " : "") << s;
    if (i < batch.labels.size() && batch.labels[i] == model::kSkippedLabel) {
      csv_ << 's';
      ++skipped_;
    }
  }
  csv_ << '\n';
  ++batches_;
}

AuditResult SampleAudit::check_epoch(int epoch, const comm::Communicator& trainers,
                                     std::chrono::duration<double> timeout) {
  csv_.flush();
  CONFLUX_CHECK(csv_.good(), "audit: writing {} failed", csv_path_.string());
  std::vector<double> totals = counts_;
  totals.push_back(static_cast<double>(skipped_));
  totals.push_back(static_cast<double>(batches_));
  trainers.allreduce_sum(totals, timeout);
  const auto counted = totals.end() - 2;
  const auto bad = std::find_if(totals.begin(), counted, [](double c) { return c != 1; });
  CONFLUX_CHECK(bad == counted,
                "audit: epoch {}: sample {} was used {} time(s) over all trainers, not once", epoch,
                bad - totals.begin(), *bad);
  AuditResult result{counts_.size(), static_cast<std::size_t>(totals.back()),
                     static_cast<std::size_t>(totals.end()[-2])};
  std::fill(counts_.begin(), counts_.end(), 0.0);
  batches_ = 0;
  skipped_ = 0;
  return result;
}

}  // namespace conflux::train
