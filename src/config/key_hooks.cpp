// The hooked keys of keys.hpp: values that are not stored as written. Paths keep what was
// written (Config::with resolves them again, e.g. run.dir after run.name changed) and their
// members hold what the run uses; data.offload_ratio is "auto" or a number.

#include <filesystem>

#include "config_builder.hpp"
#include "conflux/core/error.hpp"

namespace conflux {

namespace {

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
    text.replace(pos, from.size(), to);
  return text;
}

// InputError for a {placeholder} in run.dir's template other than {time} and {name}: kept
// literally, a typo such as {date} would name every run's directory the same.
void check_run_dir_placeholders(const std::string& dir, const std::string& where) {
  for (std::size_t open = dir.find('{'); open != std::string::npos;
       open = dir.find('{', open + 1)) {
    const std::size_t close = dir.find('}', open);
    if (close == std::string::npos) return;  // a lone brace is no placeholder
    const std::string placeholder = dir.substr(open, close - open + 1);
    if (placeholder == "{time}" || placeholder == "{name}") continue;
    CONFLUX_INPUT_ERROR(
        "{}: run.dir = \"{}\": unknown placeholder {}; known: {{time}} (the launch date-time) "
        "and {{name}} (run.name)",
        where, dir, placeholder);
  }
}

}  // namespace

KeyBinding ConfigBuilder::run_dir() {
  return {
      [](const Config& c) -> KeyValue { return c.run().dir.string(); }, nullptr,
      [](ConfigBuilder& b) {
        const std::string& dir = b.written("run.dir");
        CONFLUX_REQUIRE(!dir.empty(), "{}: run.dir must not be empty", b.config().where("run.dir"));
        // The template, not the result: run.name may hold braces of its own.
        check_run_dir_placeholders(dir, b.config().where("run.dir"));
        b.section<RunSection>().dir = replace_all(
            replace_all(dir, "{time}", b.sources().launch_time), "{name}", b.config().run().name);
      }};
}

KeyBinding ConfigBuilder::data_dir() {
  return {[](const Config& c) -> KeyValue { return c.data().dir.string(); }, nullptr,
          [](ConfigBuilder& b) {
            std::string dir = b.written("data.dir");
            if (dir.empty()) dir = b.sources().env_data_dir;
            // Empty only when the environment gave no directory either: the catalog then says
            // where conflux looks, rather than reading the working directory.
            b.section<DataSection>().dir = dir.empty()
                                               ? std::filesystem::path()
                                               : std::filesystem::absolute(dir).lexically_normal();
          }};
}

KeyBinding ConfigBuilder::data_hdf5_file() {
  return {[](const Config& c) -> KeyValue { return c.data().hdf5_file.string(); }, nullptr,
          [](ConfigBuilder& b) {
            const std::string& file = b.written("data.hdf5_file");
            b.section<DataSection>().hdf5_file =
                file.empty() ? std::filesystem::path() : std::filesystem::absolute(file);
          }};
}

KeyBinding ConfigBuilder::data_path() {
  return {[](const Config& c) -> KeyValue { return c.data().path.string(); }, nullptr,
          [](ConfigBuilder& b) {
            const std::string& path = b.written("data.path");
            b.section<DataSection>().path =
                path.empty() ? std::filesystem::path() : std::filesystem::absolute(path);
          }};
}

KeyBinding ConfigBuilder::data_offload_ratio() {
  return {[](const Config& c) -> KeyValue {
            if (c.data().offload_auto) return std::string("auto");
            return c.data().offload_ratio;
          },
          [](ConfigBuilder& b, const KeyValue& value) {
            DataSection& data = b.section<DataSection>();
            // "auto": the controller starts every trainer at 0.
            data.offload_auto = std::holds_alternative<std::string>(value);
            data.offload_ratio = data.offload_auto ? 0.0 : std::get<double>(value);
          },
          nullptr};
}

KeyBinding ConfigBuilder::transform_plugin() {
  return {[](const Config& c) -> KeyValue { return c.transform().plugin.string(); }, nullptr,
          [](ConfigBuilder& b) {
            const std::string& plugin = b.written("transform.plugin");
            b.section<TransformSection>().plugin =
                plugin.empty() ? std::filesystem::path()
                               : std::filesystem::absolute(plugin).lexically_normal();
          }};
}

KeyBinding ConfigBuilder::checkpoint_dir() {
  // The resolved config keeps checkpoint.dir as written: empty follows run.dir on reload.
  return {[](const Config& c) -> KeyValue { return c.written_.at("checkpoint.dir"); }, nullptr,
          [](ConfigBuilder& b) {
            const std::string& dir = b.written("checkpoint.dir");
            b.section<CheckpointSection>().dir =
                dir.empty() ? b.config().run().dir / "checkpoints" : std::filesystem::path(dir);
          }};
}

}  // namespace conflux
