#include "report.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <limits>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/json.hpp"

namespace conflux::bench {

namespace po = boost::program_options;

namespace {

// Terminal columns taken by UTF-8 `text` ("µs" is two, not three): continuation bytes take none.
std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (const char ch : text) width += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return width;
}

std::string pad(const std::string& text, std::size_t width, bool right) {
  const std::string fill(width - std::min(width, display_width(text)), ' ');
  return right ? fill + text : text + fill;
}

// A boost::any from Boost.Program_options as a cell, for the types the scenarios use.
std::optional<Cell> any_cell(const boost::any& value) {
  if (const auto* v = boost::any_cast<int>(&value)) return Cell(*v);
  if (const auto* v = boost::any_cast<unsigned>(&value)) return Cell(*v);
  if (const auto* v = boost::any_cast<long>(&value)) return Cell(*v);
  if (const auto* v = boost::any_cast<unsigned long>(&value)) return Cell(*v);
  if (const auto* v = boost::any_cast<long long>(&value)) return Cell(*v);
  if (const auto* v = boost::any_cast<bool>(&value)) return Cell(*v);
  if (const auto* v = boost::any_cast<double>(&value)) return Cell(*v);
  if (const auto* v = boost::any_cast<float>(&value)) return Cell(static_cast<double>(*v));
  if (const auto* v = boost::any_cast<std::string>(&value)) return Cell(*v);
  if (const auto* v = boost::any_cast<std::vector<std::string>>(&value)) {
    std::string joined;
    for (const auto& item : *v) joined += (joined.empty() ? "" : " ") + item;
    return Cell(joined);
  }
  return std::nullopt;
}

}  // namespace

std::string Cell::json() const {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&value)) return json_number(*d);
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  return json_string(std::get<std::string>(value));
}

std::string Cell::text(int precision) const {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&value)) {
    return std::isfinite(*d) ? fmt::format("{:.{}f}", *d, precision) : std::string("-");
  }
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "yes" : "no";
  return std::get<std::string>(value);
}

double Cell::number() const {
  if (const auto* i = std::get_if<std::int64_t>(&value)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&value)) return *d;
  if (const auto* b = std::get_if<bool>(&value)) return *b ? 1 : 0;
  return std::numeric_limits<double>::quiet_NaN();
}

Table::Table(std::string id, std::string title, std::vector<Column> columns)
    : id_(std::move(id)), title_(std::move(title)), columns_(std::move(columns)) {}

void Table::add_row(std::vector<Cell> row) {
  CONFLUX_CHECK(row.size() == columns_.size(), "table '{}': a row of {} cells for {} columns", id_,
                row.size(), columns_.size());
  rows_.push_back(std::move(row));
}

std::vector<double> Table::numbers(std::string_view name) const {
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    if (columns_[c].name != name) continue;
    std::vector<double> out;
    for (const auto& row : rows_) out.push_back(row[c].number());
    return out;
  }
  CONFLUX_RUNTIME_ERROR("table '{}' has no column '{}'", id_, name);
}

std::string Table::format() const {
  const std::size_t n = columns_.size();
  std::vector<std::vector<std::string>> texts;
  std::vector<std::size_t> widths(n);
  std::vector<bool> numeric(n, true);  // right-aligned header: the column holds only numbers
  for (std::size_t c = 0; c < n; ++c) widths[c] = display_width(columns_[c].name);
  for (const auto& row : rows_) {
    auto& line = texts.emplace_back();
    for (std::size_t c = 0; c < n; ++c) {
      line.push_back(row[c].text(columns_[c].precision));
      widths[c] = std::max(widths[c], display_width(line.back()));
      if (std::holds_alternative<std::string>(row[c].value)) numeric[c] = false;
    }
  }
  const auto join = [&](const auto& cell_text, const auto& right) {
    std::string line;
    for (std::size_t c = 0; c < n; ++c) {
      if (c > 0) line += "  ";
      line += pad(cell_text(c), widths[c], right(c));
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line + "\n";
  };
  std::string out = title_.empty() ? "" : title_ + "\n";
  out += join([&](std::size_t c) { return columns_[c].name; },
              [&](std::size_t c) { return static_cast<bool>(numeric[c]); });
  out += join([&](std::size_t c) { return std::string(widths[c], '-'); },
              [](std::size_t) { return false; });
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    out += join(
        [&](std::size_t c) { return texts[r][c]; },
        [&](std::size_t c) { return !std::holds_alternative<std::string>(rows_[r][c].value); });
  }
  return out;
}

void Table::print() const {
  fmt::print("{}", format());
  std::fflush(stdout);
}

std::string Table::json() const {
  std::string out = fmt::format("{{\"id\": {}, \"title\": {}, \"columns\": [", json_string(id_),
                                json_string(title_));
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    out += (c ? ", " : "") + json_string(columns_[c].name);
  }
  out += "], \"rows\": [";
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    out += r ? ",\n    {" : "\n    {";
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      out +=
          fmt::format("{}{}: {}", c ? ", " : "", json_string(columns_[c].name), rows_[r][c].json());
    }
    out += "}";
  }
  return out + (rows_.empty() ? "]}" : "\n  ]}");
}

void draw_plot(const Plot& plot, const std::string& png) {
  if (plot.series.empty()) {
    fmt::print("plot {} skipped: no data to plot\n", png);
    return;
  }
  try {
    const auto parent = std::filesystem::path(png).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    report::render_plot(plot, png, report::find_gnuplot());
    fmt::print("plot written to {}\n", png);
  } catch (const Error& e) {
    fmt::print("plot {} skipped: {}\n", png, e.what());
  }
}

std::optional<po::variables_map> parse_scenario_options(const std::string& scenario,
                                                        const std::vector<std::string>& args,
                                                        po::options_description& desc,
                                                        CommonOptions& common,
                                                        const comm::Communicator& world) {
  po::options_description output("output options (every scenario)");
  output.add_options()("json", po::value(&common.json)->value_name("FILE"),
                       "also write the results as JSON to FILE: scenario, parameters, tables "
                       "(rows as objects), summary")(
      "plot", po::value(&common.plot)->value_name("FILE.png"),
      "also draw the results into FILE.png with gnuplot (skipped, with a message, when "
      "gnuplot is not installed)");
  // Every scenario answers --help, whether or not its own options name it.
  if (desc.find_nothrow("help", false) == nullptr) output.add_options()("help", "this help");
  desc.add(output);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(desc).run(), vm);
    // --help before notify(): a required option must not hide the help.
    if (vm.count("help")) {
      if (world.rank() == 0) std::cout << desc << "\n";
      return std::nullopt;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    CONFLUX_INPUT_ERROR("{}: {} (see conflux-bench {} --help)", scenario, e.what(), scenario);
  }
  if (world.rank() == 0) {  // the rank that writes them
    check_output_file(common.json, "--json");
    check_output_file(common.plot, "--plot");
  } else {  // so that no other rank's report, partial or not, ever writes them
    common = CommonOptions{};
  }
  return vm;
}

void check_output_file(const std::string& path, std::string_view option) {
  if (path.empty()) return;
  const std::filesystem::path file(path);
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    CONFLUX_INPUT_ERROR("{} {}: cannot create directory {}: {}", option, path, dir.string(),
                        ec.message());
  if (std::filesystem::is_directory(file)) {
    CONFLUX_INPUT_ERROR("{} {}: is a directory, not a file", option, path);
  }
  const std::filesystem::path probe = dir / fmt::format(".conflux-bench-probe-{}", ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    CONFLUX_INPUT_ERROR("{} {}: cannot write in {}: {}", option, path, dir.string(),
                        std::strerror(errno));
  }
  ::close(fd);
  std::filesystem::remove(probe, ec);
}

Report::Report(std::string scenario, CommonOptions outputs)
    : scenario_(std::move(scenario)),
      outputs_(std::move(outputs)),
      uncaught_at_start_(std::uncaught_exceptions()) {}

Report::~Report() {
  if (written_ || std::uncaught_exceptions() <= uncaught_at_start_) return;
  if (outputs_.json.empty() && outputs_.plot.empty()) return;
  try {  // unwinding: keep what was measured, and say that the rest is missing
    set_summary("complete", false);
    write();
    fmt::print(stderr, "conflux-bench {}: failed; the results measured so far were written\n",
               scenario_);
  } catch (...) {  // the original error is the one to report
  }
}

void Report::add_parameters(const po::variables_map& vm) {
  for (const auto& [name, value] : vm) {
    if (name == "help" || name == "json" || name == "plot") continue;
    if (auto cell = any_cell(value.value())) set_parameter(name, std::move(*cell));
  }
}

void Report::set_parameter(const std::string& name, Cell value) {
  for (auto& [key, cell] : parameters_) {
    if (key == name) {
      cell = std::move(value);
      return;
    }
  }
  parameters_.emplace_back(name, std::move(value));
}

Table& Report::add_table(Table table) {
  return tables_.emplace_back(std::move(table));
}

void Report::set_summary(const std::string& name, Cell value) {
  for (auto& [key, cell] : summary_) {
    if (key == name) {
      cell = std::move(value);
      return;
    }
  }
  summary_.emplace_back(name, std::move(value));
}

void Report::set_plot(Plot plot) {
  plot_ = std::move(plot);
}

std::string Report::json() const {
  const auto object = [](const std::vector<std::pair<std::string, Cell>>& fields) {
    std::string out = "{";
    for (std::size_t i = 0; i < fields.size(); ++i) {
      out += fmt::format("{}{}: {}", i ? ", " : "", json_string(fields[i].first),
                         fields[i].second.json());
    }
    return out + "}";
  };
  std::string out = fmt::format("{{\n  \"scenario\": {},\n  \"parameters\": {},\n  \"tables\": [",
                                json_string(scenario_), object(parameters_));
  for (std::size_t t = 0; t < tables_.size(); ++t)
    out += (t ? ",\n  " : "\n  ") + tables_[t].json();
  out += tables_.empty() ? "],\n" : "\n  ],\n";
  return out + fmt::format("  \"summary\": {}\n}}\n", object(summary_));
}

void Report::write() {
  written_ = true;
  if (!outputs_.json.empty()) {
    const std::filesystem::path path(outputs_.json);
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    publish_text_file(path, json());
    fmt::print("results written to {}\n", outputs_.json);
  }
  if (!outputs_.plot.empty()) {
    if (plot_) {
      draw_plot(*plot_, outputs_.plot);
    } else {
      fmt::print("plot {} skipped: scenario {} has no plot\n", outputs_.plot, scenario_);
    }
  }
  std::fflush(stdout);
}

}  // namespace conflux::bench
