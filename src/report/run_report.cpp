#include "conflux/report/run_report.hpp"

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/log.hpp"
#include "conflux/report/html_page.hpp"
#include "conflux/report/plot.hpp"
#include "conflux/report/run_plots.hpp"
#include "conflux/report/run_records.hpp"

namespace conflux::report {

namespace fs = std::filesystem;

fs::path write_run_report(const fs::path& run_dir, const fs::path& output_dir) {
  const RunRecords records = read_run_records(run_dir);
  const fs::path gnuplot = find_gnuplot();
  std::error_code ec;
  fs::create_directories(output_dir, ec);
  CONFLUX_REQUIRE(!ec && fs::is_directory(output_dir), "{}: cannot create the report directory: {}",
                  output_dir.string(), ec ? ec.message() : "a file is in the way");
  const std::vector<Figure> figures = run_figures(records);
  for (const Figure& figure : figures) {
    const fs::path png = output_dir / figure.file;
    if (figure.plot) {
      render_plot(*figure.plot, png, gnuplot);
    } else {
      fs::remove(png, ec);
    }
  }
  const fs::path page = output_dir / "index.html";
  publish_text_file(page, report_html(records, figures, local_time("%Y-%m-%d %H:%M:%S")));
  return page;
}

}  // namespace conflux::report
