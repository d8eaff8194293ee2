#include "report.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
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

// A gnuplot single-quoted string: nothing is special inside but the quote, written twice.
std::string gp_quote(std::string_view text) {
  std::string out = "'";
  for (const char ch : text) out += ch == '\'' ? std::string("''") : std::string(1, ch);
  return out + "'";
}

// A gnuplot double-quoted string, where \n breaks the line (a long title needs two).
std::string gp_dquote(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    if (ch == '\n') {
      out += "\\n";
    } else {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
  }
  return out + "\"";
}

std::string gp_number(double value) {
  return std::isfinite(value) ? fmt::format("{}", value) : "NaN";  // NaN: gnuplot skips it
}

// The first executable `name` on $PATH, or empty.
std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
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

void add_ceiling(Plot& plot, double y, const std::string& title) {
  if (!std::isfinite(y)) return;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymax = -xmin;
  for (const Series& s : plot.series) {
    for (const double x : s.x) xmin = std::min(xmin, x), xmax = std::max(xmax, x);
    for (const double v : s.y) {
      if (std::isfinite(v)) ymax = std::max(ymax, v);
    }
  }
  if (!std::isfinite(xmin) || y > 1.5 * ymax) {
    plot.title += fmt::format("\n({} {:.0f}: off the chart)", title, y);
    return;
  }
  plot.series.push_back(Series{.title = title, .x = {xmin, xmax}, .y = {y, y}, .style = "lines"});
}

std::string gnuplot_script(const Plot& plot, const std::string& png) {
  std::string s;
  // pngcairo draws antialiased text; Debian's gnuplot-nox has it, other builds may only have
  // the libgd `png` terminal.
  s += "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
       "  set terminal pngcairo size 900,560 noenhanced font ',10'\n"
       "} else {\n"
       "  set terminal png size 900,560 noenhanced\n"
       "}\n";
  s += "set output " + gp_quote(png) + "\n";
  s += "set title " + gp_dquote(plot.title) + "\n";
  s += "set xlabel " + gp_quote(plot.xlabel) + "\nset ylabel " + gp_quote(plot.ylabel) + "\n";
  s += "set grid\nset key " + plot.key + "\n";
  if (!plot.xtics.empty()) {
    s += "set xtics (";
    for (std::size_t i = 0; i < plot.xtics.size(); ++i) {
      s += fmt::format("{}{} {}", i ? ", " : "", gp_quote(plot.xtics[i].second),
                       gp_number(plot.xtics[i].first));
    }
    s += ")\n";
  }
  if (plot.logx && plot.categories.empty()) s += "set logscale x 2\n";
  if (plot.logy) s += "set logscale y 10\n";
  if (plot.y_from_zero && !plot.logy) s += "set yrange [0:*]\n";
  if (!plot.categories.empty()) {
    s += "set style data histograms\nset style histogram clustered gap 1\n"
         "set style fill solid 0.8 border -1\nset boxwidth 0.9\nset xtics rotate by -25\n";
  }
  std::string command = "plot ";
  std::string data;
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const Series& series = plot.series[i];
    if (i > 0) command += ", ";
    if (plot.categories.empty()) {
      command +=
          fmt::format("'-' using 1:2 with {} title {}", series.style, gp_quote(series.title));
      for (std::size_t k = 0; k < std::min(series.x.size(), series.y.size()); ++k) {
        data += gp_number(series.x[k]) + " " + gp_number(series.y[k]) + "\n";
      }
    } else {
      command += "'-' using 2:xtic(1) title " + gp_quote(series.title);
      for (std::size_t k = 0; k < std::min(plot.categories.size(), series.y.size()); ++k) {
        std::string label = plot.categories[k];
        for (char& ch : label) ch = ch == '"' ? '\'' : ch;  // a data field cannot hold a quote
        data += "\"" + label + "\" " + gp_number(series.y[k]) + "\n";
      }
    }
    data += "e\n";
  }
  return s + command + "\n" + data;
}

void draw_plot(const Plot& plot, const std::string& png) {
  const std::string gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty()) {
    fmt::print("plot {} skipped: gnuplot is not installed (apt-get install gnuplot-nox)\n", png);
    return;
  }
  if (plot.series.empty()) {
    fmt::print("plot {} skipped: no data to plot\n", png);
    return;
  }
  const auto parent = std::filesystem::path(png).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  const std::string script = gnuplot_script(plot, png);
  std::fflush(stdout);
  // A gnuplot that dies early must not kill the benchmark with SIGPIPE.
  const auto previous = std::signal(SIGPIPE, SIG_IGN);
  // Its stdout gets the image itself when `set output` fails; its errors go to stderr.
  FILE* pipe = ::popen(("'" + gnuplot + "' >/dev/null").c_str(), "w");
  int status = -1;
  if (pipe != nullptr) {
    std::fwrite(script.data(), 1, script.size(), pipe);
    status = ::pclose(pipe);
  }
  std::signal(SIGPIPE, previous);
  if (status == 0) {
    fmt::print("plot written to {}\n", png);
  } else {
    fmt::print("plot {} skipped: gnuplot failed ({})\n", png,
               status == -1             ? std::string("could not start it")
               : WIFEXITED(status) != 0 ? fmt::format("exit {}", WEXITSTATUS(status))
                                        : std::string("killed by a signal"));
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
