#pragma once
/// @file limited_source.hpp
/// The first N samples of any source (data.train_limit, data.test_limit).

#include <cstddef>
#include <memory>

#include "conflux/data/io/sample_source.hpp"

namespace conflux::data {

/// Exposes samples [0, limit) of another source, with that source's info (its identity
/// `sources` too: the limit itself is part of the agreed config).
class LimitedSource final : public SampleSource {
 public:
  /// Keeps min(limit, inner->size()) samples of `inner`.
  LimitedSource(std::unique_ptr<SampleSource> inner, std::size_t limit);

  const SourceInfo& info() const noexcept override { return inner_->info(); }
  std::size_t size() const noexcept override { return size_; }
  model::Label label(std::size_t i) const override;
  void read(std::size_t i, std::vector<std::uint8_t>& out) const override;
  std::string where(std::size_t i) const override;
  /// The inner source's (its index is not trimmed).
  std::size_t resident_bytes() const noexcept override { return inner_->resident_bytes(); }

 private:
  void require_in_range(std::size_t i) const;

  std::unique_ptr<SampleSource> inner_;
  std::size_t size_;
};

/// `source` itself when `limit` is 0 or not below its size, else a LimitedSource over it.
std::unique_ptr<SampleSource> limit_source(std::unique_ptr<SampleSource> source, std::size_t limit);

}  // namespace conflux::data
