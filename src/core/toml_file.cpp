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

std::vector<const toml::table*> toml_tables(const toml::table& table, std::string_view key,
                                            const std::string& file) {
  std::vector<const toml::table*> out;
  const toml::node* node = table.get(key);
  if (node == nullptr) return out;
  const toml::array* list = node->as_array();
  const auto not_tables = [&] {
    CONFLUX_INPUT_ERROR("{}: '{}' must be a list of [[{}]] tables", file, key, key);
  };
  if (list == nullptr) not_tables();
  for (const toml::node& item : *list) {
    const toml::table* t = item.as_table();
    if (t == nullptr) not_tables();
    out.push_back(t);
  }
  return out;
}

}  // namespace conflux
