#include "conflux/core/toml_file.hpp"

#include "conflux/core/error.hpp"

namespace conflux {

toml::table parse_toml_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  try {
    return toml::parse_file(name);
  } catch (const toml::parse_error& e) {
    CONFLUX_INPUT_ERROR("{}:{}:{}: {}", name, e.source().begin.line, e.source().begin.column,
                        e.description());
  }
}

double toml_number(const toml::table& table, std::string_view key, const std::string& file) {
  const toml::node* node = table.get(key);
  if (node == nullptr || !(node->is_floating_point() || node->is_integer())) {
    CONFLUX_INPUT_ERROR("{}:{}:{}: '{}' is missing or not a number", file,
                        table.source().begin.line, table.source().begin.column, key);
  }
  return *node->value<double>();
}

}  // namespace conflux
