// Turning TOML text plus --set overrides into a Config: parse, apply the overrides, refuse
// unknown sections and keys, then hand every key of the schema (its value, else its default)
// and every layer to the ConfigBuilder.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "config_builder.hpp"
#include "conflux/config/config.hpp"
#include "conflux/core/byte_size.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/suggest.hpp"
#include "key_values.hpp"
#include "layer_reader.hpp"

namespace conflux {

namespace {

// The largest config file read: hundreds of times any real config (the shipped ones are about
// 1 KiB), and a bound on what a mistaken --config (a disk image, a log) makes every rank read.
// docs/config.md states it.
constexpr std::size_t kMaxConfigMiB = 1;
constexpr std::size_t kMaxConfigBytes = kMaxConfigMiB << 20;

// What a file that is not a regular one is, for the message.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "of an unknown kind";
}

// InputError unless `st` is a regular file of at most kMaxConfigBytes.
void require_config_file(const struct stat& st, const std::string& name) {
  CONFLUX_REQUIRE(S_ISREG(st.st_mode), "{}: not a regular file ({}); expected a TOML config file",
                  name, file_kind(st.st_mode));
  CONFLUX_REQUIRE(static_cast<std::uintmax_t>(st.st_size) <= kMaxConfigBytes,
                  "{}: {} is larger than the {} MiB a config may have", name,
                  format_bytes(static_cast<double>(st.st_size)), kMaxConfigMiB);
}

[[noreturn]] void cannot_open(const std::string& name, int error) {
  CONFLUX_INPUT_ERROR("{}: cannot open config file ({})", name,
                      error == ENOENT   ? "no such file"
                      : error == EACCES ? "permission denied"
                                        : std::strerror(error));
}

// Closes a descriptor when it goes out of scope.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() { ::close(fd); }
};

// The text of a config file, read with a bound. The file is checked before it is opened: opening
// a FIFO waits for a writer, and a device (/dev/zero) has no end. It is checked again once open
// (something else may have taken its name in between), and at most the cap is read (it may grow
// while it is read).
std::string read_config_text(const std::filesystem::path& path) {
  const std::string name = path.string();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) cannot_open(name, errno);
  require_config_file(st, name);
  // O_NONBLOCK: should a FIFO have taken the name since stat(), open() returns at once.
  const FileDescriptor file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (file.fd < 0) cannot_open(name, errno);
  CONFLUX_REQUIRE(::fstat(file.fd, &st) == 0, "{}: cannot stat config file ({})", name,
                  std::strerror(errno));
  require_config_file(st, name);
  std::string text(kMaxConfigBytes + 1, '\0');  // one byte more tells a file that grew
  std::size_t size = 0;
  while (size < text.size()) {
    const ssize_t got = ::read(file.fd, text.data() + size, text.size() - size);
    if (got == 0) break;
    if (got < 0 && errno == EINTR) continue;
    CONFLUX_REQUIRE(got > 0, "{}: cannot read config file ({})", name, std::strerror(errno));
    size += static_cast<std::size_t>(got);
  }
  CONFLUX_REQUIRE(size <= kMaxConfigBytes,
                  "{}: grew beyond the {} MiB a config may have while it was read", name,
                  kMaxConfigMiB);
  text.resize(size);
  return text;
}

// The tables a config may have, in documentation order.
const std::vector<std::string>& section_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& k : config_keys()) {
      const std::string section(section_of(k.path));
      if (std::find(all.begin(), all.end(), section) == all.end()) all.push_back(section);
    }
    all.push_back("model");
    return all;
  }();
  return names;
}

// `text` with line breaks shown as \n, so that a message quoting it stays on one line.
std::string one_line(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

/// Turns TOML text plus overrides into a Config; one instance per load.
class ConfigLoader {
 public:
  ConfigLoader(std::string source_name, const ConfigSources& sources)
      : source_name_(std::move(source_name)), sources_(sources) {}

  Config load(std::string_view text) {
    parse(text);
    for (const auto& override_text : sources_.overrides) apply_override(override_text);
    check_unknown_keys();
    ConfigBuilder builder(sources_);
    for (const KeySpec& spec : config_keys()) read_key(builder, spec);
    read_layers(builder);
    return builder.finish();
  }

 private:
  [[noreturn]] void fail_at(const toml::source_region& where, const std::string& message) const {
    CONFLUX_INPUT_ERROR("{}: {}", location(where), message);
  }

  std::string location(const toml::source_region& where) const {
    const std::string path = where.path ? std::string(*where.path) : source_name_;
    if (path.rfind("--set", 0) == 0) return path;  // an override: its text is the best locator
    if (where.begin.line == 0) return path;
    return fmt::format("{}:{}:{}", path, where.begin.line, where.begin.column);
  }

  void parse(std::string_view text) {
    try {
      root_ = toml::parse(text, source_name_);
    } catch (const toml::parse_error& e) {
      fail_at(e.source(), fmt::format("TOML syntax error: {}", e.description()));
    }
  }

  void apply_override(const std::string& text) {
    const auto eq = text.find('=');
    CONFLUX_REQUIRE(eq != std::string::npos && eq > 0,
                    "--set '{}': expected key=value, e.g. --set train.lr=0.1", text);
    std::string path = text.substr(0, eq);
    path.erase(path.find_last_not_of(" \t") + 1);
    const std::string value_text = text.substr(eq + 1);
    const std::string origin = fmt::format("--set {}", one_line(text));
    // The one name the schema does not hold: without this, "unknown key" would be the answer.
    CONFLUX_REQUIRE(path != "model.layers" && !path.starts_with("model.layers[") &&
                        !path.starts_with("model.layers."),
                    "{}: model.layers is a list of [[model.layers]] tables and cannot be set "
                    "with --set; edit the config file",
                    origin);
    CONFLUX_REQUIRE(find_key(path) != nullptr, "{}: unknown key '{}'{}", origin, path,
                    did_you_mean(path, key_paths()));
    toml::table snippet;
    try {
      snippet = toml::parse(std::string_view("v = " + value_text), std::string_view(origin));
      // "0.1\nepochs=99" parses as two keys: the second must not vanish silently.
      CONFLUX_REQUIRE(snippet.size() == 1,
                      "{}: expected one value, found trailing content after it (one key=value "
                      "per --set)",
                      origin);
    } catch (const toml::parse_error&) {
      // Not a TOML value: take the text as a bare string (e.g. --set data.dataset=mnist), but
      // one line only, for the same reason as above.
      CONFLUX_REQUIRE(value_text.find_first_of("\r\n") == std::string::npos,
                      "{}: expected one value, found trailing content after it (one key=value "
                      "per --set)",
                      origin);
      snippet = toml::table{};
      snippet.insert_or_assign("v", value_text);
    }
    const std::string section(section_of(path));
    if (!root_.contains(section)) root_.insert(section, toml::table{});
    toml::table* table = root_[section].as_table();
    CONFLUX_REQUIRE(table != nullptr, "{}: '{}' is not a table in {}", origin, section,
                    source_name_);
    table->insert_or_assign(path.substr(section.size() + 1), *snippet.get("v"));
    override_origin_[path] = origin;
  }

  void check_unknown_keys() const {
    for (const auto& [section_key, section_node] : root_) {
      const std::string section(section_key.str());
      const auto& sections = section_names();
      if (std::find(sections.begin(), sections.end(), section) == sections.end()) {
        fail_at(section_key.source(),
                fmt::format("unknown section '{}'{}", section, did_you_mean(section, sections)));
      }
      const toml::table* table = section_node.as_table();
      if (table == nullptr) {
        fail_at(section_node.source(),
                fmt::format("'{}' must be a table ([{}]), not a value", section, section));
      }
      for (const auto& [key, node] : *table) {
        const std::string path = section + "." + std::string(key.str());
        if (path == "model.layers" || path == "model.blocks" || find_key(path) != nullptr) continue;
        fail_at(key.source(),
                fmt::format("unknown key '{}'{}", path, did_you_mean(path, key_paths())));
      }
    }
  }

  // Where a present value came from: the --set that gave it, else its place in the file.
  std::string where_given(const std::string& path, const toml::node& node) const {
    const auto it = override_origin_.find(path);
    return it != override_origin_.end() ? it->second : location(node.source());
  }

  // The key's value (or its default) to the builder; InputError when a required key is absent.
  void read_key(ConfigBuilder& builder, const KeySpec& spec) {
    if (const toml::node* node = root_.at_path(spec.path).node()) {
      builder.set(spec, *node, where_given(spec.path, *node));
      return;
    }
    if (spec.default_toml.empty()) {
      CONFLUX_INPUT_ERROR("{}: missing required key '{}' ({})", source_name_, spec.path, spec.doc);
    }
    builder.set(spec, *default_node(spec), "default");
  }

  const toml::node* default_node(const KeySpec& spec) {
    defaults_ =
        toml::parse(std::string_view("v = " + spec.default_toml), std::string_view("default"));
    return defaults_.get("v");
  }

  void read_layers(ConfigBuilder& builder) {
    const toml::node* node = root_.at_path("model.layers").node();
    std::vector<LayerSpec> specs = read_model_layers(
        root_, source_name_, [this](const toml::source_region& where) { return location(where); });
    builder.set_layers(std::move(specs), location(node->source()));
  }

  std::string source_name_;
  const ConfigSources& sources_;
  toml::table root_;
  toml::table defaults_;  // the parsed default default_node() handed out last
  std::map<std::string, std::string> override_origin_;
};

Config load_config_string(std::string_view toml_text, std::string_view source_name,
                          const ConfigSources& sources) {
  return ConfigLoader(std::string(source_name), sources).load(toml_text);
}

Config load_config_file(const std::filesystem::path& path, const ConfigSources& sources) {
  return load_config_string(read_config_text(path), path.string(), sources);
}

}  // namespace conflux
