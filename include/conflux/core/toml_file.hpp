#pragma once
/// @file toml_file.hpp
/// Reading the project's own TOML data files (profiles, fitted models): parse errors and
/// missing numbers become InputErrors naming file, line and column.

#include <toml++/toml.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace conflux {

/// Parses `path`; InputError "file:line:column: what" on a syntax error or unreadable file.
toml::table parse_toml_file(const std::filesystem::path& path);

/// The number at `key` of `table` (integers accepted); InputError naming `file`, the table's
/// line and column and the key when it is missing or not a number.
double toml_number(const toml::table& table, std::string_view key, const std::string& file);

/// The [[key]] tables of `table` in file order, none when the key is absent; InputError naming
/// `file` when the key holds anything but a list of tables.
std::vector<const toml::table*> toml_tables(const toml::table& table, std::string_view key,
                                            const std::string& file);

}  // namespace conflux
