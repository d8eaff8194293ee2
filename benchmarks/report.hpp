#pragma once
/// @file report.hpp
/// How every conflux-bench scenario reports: aligned tables on stdout, an optional JSON file
/// (--json) with the scenario name, its parameters and the rows as objects, and an optional
/// PNG plot (--plot) drawn by piping a script into gnuplot.

#include <boost/program_options.hpp>

#include <concepts>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "conflux/comm/communicator.hpp"
#include "conflux/report/plot.hpp"

namespace conflux::bench {

/// One table cell: an integer, a measured number (printed with its column's precision), a
/// flag or text. Integers stay exact in the JSON file.
struct Cell {
  std::variant<std::int64_t, double, std::string, bool> value;
  Cell(double v) : value(v) {}  // NOLINT: implicit, so that rows read as {a, b, c}
  template <std::integral T>    // bool takes the non-template overload below
  Cell(T v) : value(static_cast<std::int64_t>(v)) {}  // NOLINT
  Cell(bool v) : value(v) {}                          // NOLINT
  Cell(std::string v) : value(std::move(v)) {}        // NOLINT
  Cell(const char* v) : value(std::string(v)) {}      // NOLINT
  /// The cell as a JSON value.
  std::string json() const;
  /// The cell as printed in a column of `precision` decimals.
  std::string text(int precision) const;
  /// The number it holds; NaN for text.
  double number() const;
};

/// A column: its name (also the key in the JSON rows) and the decimals of its doubles.
struct Column {
  std::string name;
  int precision = 2;
  Column(std::string n, int p = 2) : name(std::move(n)), precision(p) {}  // NOLINT
  Column(const char* n, int p = 2) : name(n), precision(p) {}             // NOLINT
};

/// A titled table of results.
class Table {
 public:
  /// `id` names the table in the JSON file (e.g. "sweep"); `title` heads the printed table.
  Table(std::string id, std::string title, std::vector<Column> columns);
  /// Appends a row; RuntimeError unless it has one cell per column.
  void add_row(std::vector<Cell> row);
  const std::string& id() const noexcept { return id_; }
  const std::string& title() const noexcept { return title_; }
  const std::vector<Column>& columns() const noexcept { return columns_; }
  const std::vector<std::vector<Cell>>& rows() const noexcept { return rows_; }
  /// The numbers of column `name` (NaN for text cells); RuntimeError for an unknown column.
  std::vector<double> numbers(std::string_view name) const;
  /// Title, header and rows, aligned: numbers to the right, text to the left.
  std::string format() const;
  /// Prints format() to stdout.
  void print() const;
  /// {"id": ..., "title": ..., "columns": [...], "rows": [{column: value, ...}, ...]}.
  std::string json() const;

 private:
  std::string id_;
  std::string title_;
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
};

// The plots are conflux's one plotting code (conflux/report/plot.hpp), shared with
// `conflux report`.
using report::add_ceiling;
using report::gnuplot_script;
using report::Plot;
using report::Series;

/// Draws `plot` into `png` with gnuplot (report::render_plot). Prints one line saying where
/// the plot went, or that it was skipped and why (gnuplot missing or failing): a plot is a
/// convenience, so it never fails the benchmark.
void draw_plot(const Plot& plot, const std::string& png);

/// The options every scenario accepts.
struct CommonOptions {
  std::string json{};  ///< --json FILE: results as JSON
  std::string plot{};  ///< --plot FILE.png: a plot (scenarios without one say so)
};

/// Checks, before anything is measured, that an output file can be written: creates its
/// directory and a probe file beside it. InputError naming `option` and the reason otherwise.
/// Empty `path`: nothing to check.
void check_output_file(const std::string& path, std::string_view option);

/// Parses a scenario's command line: `desc` plus the common options. Returns nothing when
/// --help was asked for (rank 0 has printed it). Unknown or malformed options raise
/// InputError (exit 2) naming the scenario, as does (on rank 0) a --json or --plot file that
/// cannot be written.
std::optional<boost::program_options::variables_map> parse_scenario_options(
    const std::string& scenario, const std::vector<std::string>& args,
    boost::program_options::options_description& desc, CommonOptions& common,
    const comm::Communicator& world);

/// What a scenario measured: its parameters, tables, summary figures and plot. Scenarios fill
/// it on the rank that measured (world rank 0) and call write() at the end. A report left by
/// an exception writes what it holds so far (marked incomplete), so that a late failure costs
/// no measured result.
class Report {
 public:
  /// Reports scenario `scenario` into the files `outputs` names.
  Report(std::string scenario, CommonOptions outputs);
  ~Report();
  Report(const Report&) = delete;
  Report& operator=(const Report&) = delete;
  /// Records every option in `vm` except help, json and plot as a parameter.
  void add_parameters(const boost::program_options::variables_map& vm);
  /// Records one parameter (replacing one of the same name).
  void set_parameter(const std::string& name, Cell value);
  /// Adds a table; the reference stays valid for the report's life.
  Table& add_table(Table table);
  /// Records a headline figure (e.g. the best speedup) in the JSON file's "summary".
  void set_summary(const std::string& name, Cell value);
  /// The plot --plot draws.
  void set_plot(Plot plot);
  /// The whole report as one JSON object.
  std::string json() const;
  /// Writes --json (RuntimeError when the file cannot be written) and draws --plot.
  void write();

 private:
  std::string scenario_;
  CommonOptions outputs_;
  bool written_ = false;
  int uncaught_at_start_ = 0;
  std::vector<std::pair<std::string, Cell>> parameters_;
  std::deque<Table> tables_;
  std::vector<std::pair<std::string, Cell>> summary_;
  std::optional<Plot> plot_;
};

}  // namespace conflux::bench
