#include "conflux/data/io/limited_source.hpp"

#include <algorithm>

#include "conflux/core/error.hpp"

namespace conflux::data {

LimitedSource::LimitedSource(std::unique_ptr<SampleSource> inner, std::size_t limit)
    : inner_(std::move(inner)), size_(std::min(limit, inner_->size())) {}

void LimitedSource::require_in_range(std::size_t i) const {
  // Past the limit is a caller's bug, not bad data: the inner source would answer silently.
  CONFLUX_CHECK(i < size_, "{}: sample {} is past the limit of {} samples", inner_->info().name, i,
                size_);
}

model::Label LimitedSource::label(std::size_t i) const {
  require_in_range(i);
  return inner_->label(i);
}

void LimitedSource::read(std::size_t i, std::vector<std::uint8_t>& out) const {
  require_in_range(i);
  inner_->read(i, out);
}

std::string LimitedSource::where(std::size_t i) const {
  require_in_range(i);
  return inner_->where(i);
}

std::unique_ptr<SampleSource> limit_source(std::unique_ptr<SampleSource> source,
                                           std::size_t limit) {
  if (limit == 0 || limit >= source->size()) return source;
  return std::make_unique<LimitedSource>(std::move(source), limit);
}

}  // namespace conflux::data
