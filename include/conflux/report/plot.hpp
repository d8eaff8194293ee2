#pragma once
/// @file plot.hpp
/// PNG plots drawn by gnuplot (Debian's gnuplot-nox): the one plotting code of conflux, used by
/// `conflux report` and by conflux-bench --plot. A plot is data (series, labels, axes); the
/// gnuplot script holds its data inline, so it stands alone.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace conflux::report {

/// One line of a plot.
struct Series {
  std::string title{};
  std::vector<double> x{};  ///< ignored for bar charts (Plot::categories set)
  std::vector<double> y{};
  /// gnuplot `with` style: lines, points, linespoints, steps, impulses, with options
  /// ("points pt 7 ps 1.2").
  std::string style = "linespoints";
  bool right_axis = false;  ///< drawn against the right-hand y axis (Plot::y2label)
};

/// A text placed at (x, y) in the plot's coordinates (e.g. a decision's number).
struct Label {
  double x = 0;
  double y = 0;
  std::string text{};
};

/// A PNG plot: several series of y against x, or a bar chart over named categories.
struct Plot {
  std::string title{};
  std::string xlabel{};
  std::string ylabel{};
  bool logx = false;
  bool logy = false;
  bool y_from_zero = true;       ///< y axis starts at 0 (not with logy, nor with yrange)
  std::string yrange{};          ///< gnuplot range such as "[0:1.05]"; empty: automatic
  std::string key = "top left";  ///< where the legend goes (gnuplot `set key`)
  std::vector<std::pair<double, std::string>> xtics{};  ///< labelled x tics; empty: automatic
  std::vector<std::string> categories{};  ///< non-empty: bar chart, series[i].y[k] per category k
  std::vector<Series> series{};
  std::vector<Label> labels{};
  int width = 900;  ///< pixels
  int height = 560;
  /// The right-hand y axis's label, for series with right_axis (from 0, its own scale).
  std::string y2label{};
};

/// Adds a horizontal line at `y` (an upper bound such as the simulated GPU step's) titled
/// `title` across the x range of plot.series. Far above every point it would only squash the
/// lines it explains, so then a second line of the plot's title names it instead. Non-finite
/// `y`: nothing.
void add_ceiling(Plot& plot, double y, const std::string& title);

/// The gnuplot script that draws `plot` into `png` (data inline, so it stands alone).
std::string gnuplot_script(const Plot& plot, const std::string& png);

/// The gnuplot executable on $PATH. InputError (exit 2, what a missing dependency is in
/// conflux, as for tools/install-deps.sh) naming the Debian package when there is none.
std::filesystem::path find_gnuplot();

/// Draws `plot` into `png` with `gnuplot` (find_gnuplot()). RuntimeError with gnuplot's own
/// message when it fails or writes no image; InputError when the plot has no series.
void render_plot(const Plot& plot, const std::filesystem::path& png,
                 const std::filesystem::path& gnuplot);

}  // namespace conflux::report
