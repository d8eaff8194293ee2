#include "conflux/data/io/sample_source.hpp"

#include <fmt/format.h>

namespace conflux::data {

InMemorySource::InMemorySource(InMemorySplit dataset) : dataset_(std::move(dataset)) {
  info_.name = dataset_.name;
  info_.format = SampleFormat::kPixels;
  info_.shape = dataset_.shape;
  info_.num_classes = dataset_.num_classes;
  info_.class_names = dataset_.class_names;
  info_.sources = dataset_.sources;
  info_.streamed = false;
}

void InMemorySource::read(std::size_t i, std::vector<std::uint8_t>& out) const {
  const auto pixels = dataset_.image(i);
  out.assign(pixels.begin(), pixels.end());
}

std::string InMemorySource::where(std::size_t i) const {
  return fmt::format("{} sample {}", dataset_.name, i);
}

std::size_t InMemorySource::resident_bytes() const noexcept {
  return dataset_.images.size() + dataset_.labels.size() * sizeof(model::Label);
}

}  // namespace conflux::data
