#include "conflux/ckpt/checkpoint_inspect.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string_view>
#include <system_error>

#include "conflux/ckpt/checkpoint_layout.hpp"
#include "conflux/ckpt/checkpoint_reader.hpp"

namespace conflux::ckpt {
namespace {

namespace fs = std::filesystem;

// Builds the description: section headings and indented "key  value" lines.
class Text {
 public:
  void heading(const std::string& text) { out_ += text + "\n"; }
  void line(std::string_view key, const std::string& value) {
    out_ += fmt::format("  {:<18} {}\n", key, value);
  }
  // `text` line by line, indented; blank lines stay blank.
  void indented(std::string_view text) {
    while (!text.empty()) {
      const auto eol = text.find('\n');
      const std::string_view row = text.substr(0, eol);
      out_ += row.empty() ? "\n" : fmt::format("    {}\n", row);
      if (eol == std::string_view::npos) break;
      text.remove_prefix(eol + 1);
    }
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

void describe_file(Text& text, const fs::path& path, const std::string& checksum,
                   const TrainingState& s) {
  std::error_code ec;
  const std::uintmax_t bytes = fs::file_size(path, ec);
  text.heading(fmt::format("checkpoint {}", path.string()));
  text.line("format", fmt::format("{} version {}", kFormat, kFormatVersion));
  text.line("checksum", fmt::format("{} (verified)", checksum));
  text.line("created", s.created.empty() ? "-" : s.created);
  text.line("size", fmt::format("{} bytes", ec ? 0 : bytes));
}

void describe_position(Text& text, const TrainingState& s) {
  text.heading("position");
  text.line("epoch", fmt::format("{}", s.epoch));
  text.line("step", fmt::format("{} / {} steps per epoch", s.step, s.steps_per_epoch));
  text.line("global step", fmt::format("{}", s.global_step));
  text.line("global batch", fmt::format("{} samples of {}", s.global_batch, s.dataset_size));
  text.line("seed", fmt::format("{}", s.seed));
  text.line("ranks", fmt::format("{} trainers, {} workers", s.trainers, s.workers));
}

void describe_model_and_trainers(Text& text, const TrainingState& s) {
  text.heading(fmt::format("model: {} tensors, {} parameters", s.tensors.size(), s.params.size()));
  for (const TensorInfo& t : s.tensors) {
    text.line(t.name, fmt::format("[{}]", fmt::join(t.shape, ", ")));
  }
  text.heading(fmt::format("optimizer: {}", s.optimizer.name));
  text.line("steps", fmt::format("{}", s.optimizer.steps));
  for (const model::OptimizerBuffer& b : s.optimizer.buffers) {
    text.line(b.name, fmt::format("[{}]", b.values.size()));
  }
  text.line("learning rate", fmt::format("{}", s.lr));
  text.heading(fmt::format("trainers: {}", s.progress.size()));
  for (std::size_t t = 0; t < s.progress.size(); ++t) {
    text.line(fmt::format("trainer {}", t),
              fmt::format("next batch index {}, offload ratio {}, offload credit {}",
                          s.progress[t].next_batch_index, s.progress[t].offload.ratio,
                          s.progress[t].offload.credit));
  }
}

void describe_accounting_and_run(Text& text, const TrainingState& s) {
  text.heading("epoch accounting");
  text.line("loss sum", fmt::format("{}", s.epoch_loss_sum));
  text.line("correct", fmt::format("{}", s.epoch_correct));
  text.line("samples", fmt::format("{}", s.epoch_samples));
  text.line("epoch seconds", fmt::format("{:.3f}", s.epoch_seconds));
  text.line("elapsed seconds", fmt::format("{:.3f}", s.elapsed_seconds));
  text.line("audit", s.audit_counts.empty()
                         ? std::string("off")
                         : fmt::format("on ({} sample counts)", s.audit_counts.size()));
  text.heading(fmt::format("metrics: {} lines", s.metrics.size()));
  if (!s.metrics.empty()) text.line("last", s.metrics.back());
  text.heading("config");
  text.indented(s.config_toml);
}

}  // namespace

std::string describe_checkpoint(const fs::path& path) {
  const VerifiedCheckpoint c = read_verified_checkpoint(path);
  Text text;
  describe_file(text, path, c.checksum, c.state);
  describe_position(text, c.state);
  describe_model_and_trainers(text, c.state);
  describe_accounting_and_run(text, c.state);
  return text.take();
}

}  // namespace conflux::ckpt
