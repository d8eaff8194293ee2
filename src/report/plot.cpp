#include "conflux/report/plot.hpp"

#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "conflux/core/error.hpp"

namespace conflux::report {

namespace {

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

// A POSIX shell single-quoted word.
std::string sh_quote(std::string_view text) {
  std::string out = "'";
  for (const char ch : text) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string axes_and_style(const Plot& plot) {
  std::string s = "set title " + gp_dquote(plot.title) + "\n";
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
  if (!plot.yrange.empty()) {
    s += "set yrange " + plot.yrange + "\n";
  } else if (plot.y_from_zero && !plot.logy) {
    s += "set yrange [0:*]\n";
  }
  if (!plot.y2label.empty()) {
    s += "set y2label " + gp_quote(plot.y2label) + "\nset y2tics\nset ytics nomirror\n";
    s += "set y2range [0:*]\n";
  }
  if (!plot.categories.empty()) {
    s += "set style data histograms\nset style histogram clustered gap 1\n"
         "set style fill solid 0.8 border -1\nset boxwidth 0.9\nset xtics rotate by -25\n";
  }
  for (const Label& label : plot.labels) {
    s += fmt::format("set label {} at {},{} offset 0.4,0.6 front\n", gp_quote(label.text),
                     gp_number(label.x), gp_number(label.y));
  }
  return s;
}

}  // namespace

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
  // pngcairo draws antialiased text; Debian's gnuplot-nox has it, other builds may only have
  // the libgd `png` terminal.
  std::string s = fmt::format(
      "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {{\n"
      "  set terminal pngcairo size {0},{1} noenhanced font ',10'\n"
      "}} else {{\n"
      "  set terminal png size {0},{1} noenhanced\n"
      "}}\n",
      plot.width, plot.height);
  s += "set output " + gp_quote(png) + "\n";
  s += axes_and_style(plot);
  std::string command = "plot ";
  std::string data;
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const Series& series = plot.series[i];
    if (i > 0) command += ", ";
    if (plot.categories.empty()) {
      command +=
          fmt::format("'-' using 1:2{} with {} title {}", series.right_axis ? " axes x1y2" : "",
                      series.style, gp_quote(series.title));
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

std::filesystem::path find_gnuplot() {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
    const std::filesystem::path candidate =
        std::filesystem::path(dir.empty() ? "." : dir) / "gnuplot";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  CONFLUX_INPUT_ERROR(
      "gnuplot is not installed (not on $PATH): the plots are drawn with it; install Debian's "
      "gnuplot-nox (apt-get install gnuplot-nox)");
}

void render_plot(const Plot& plot, const std::filesystem::path& png,
                 const std::filesystem::path& gnuplot) {
  CONFLUX_REQUIRE(!plot.series.empty(), "plot {}: no data to plot", png.string());
  // The script goes through a file rather than gnuplot's stdin, so that its error messages
  // can be read back on a pipe and quoted.
  const std::filesystem::path script = png.string() + ".gp.tmp";
  {
    std::FILE* file = std::fopen(script.c_str(), "w");
    CONFLUX_CHECK(file != nullptr, "cannot write {}", script.string());
    const std::string text = gnuplot_script(plot, png.string());
    const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
    CONFLUX_CHECK(std::fclose(file) == 0 && written, "cannot write {}", script.string());
  }
  std::error_code ec;
  std::filesystem::remove(png, ec);  // an image left from before must not pass for this one
  std::fflush(nullptr);
  const std::string command =
      sh_quote(gnuplot.string()) + " " + sh_quote(script.string()) + " 2>&1 >/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string messages;
  int status = -1;
  if (pipe != nullptr) {
    char buffer[512];
    for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
      messages.append(buffer, n);
    status = ::pclose(pipe);
  }
  std::filesystem::remove(script, ec);
  while (!messages.empty() && std::isspace(static_cast<unsigned char>(messages.back()))) {
    messages.pop_back();
  }
  if (messages.size() > 600) messages = "..." + messages.substr(messages.size() - 600);
  CONFLUX_CHECK(status == 0, "gnuplot could not draw {} ({}): {}", png.string(),
                status == -1             ? std::string("could not start it")
                : WIFEXITED(status) != 0 ? fmt::format("exit {}", WEXITSTATUS(status))
                                         : std::string("killed by a signal"),
                messages);
  CONFLUX_CHECK(std::filesystem::file_size(png, ec) > 0 && !ec, "gnuplot wrote no image to {}: {}",
                png.string(), messages);
}

}  // namespace conflux::report
