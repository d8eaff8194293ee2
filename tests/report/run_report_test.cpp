#include "conflux/report/run_report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "../support/temp_dir.hpp"
#include "conflux/report/html_page.hpp"
#include "conflux/report/plot.hpp"
#include "conflux/report/run_plots.hpp"
#include "conflux/telemetry/run_record_io.hpp"

namespace conflux::report {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool has_gnuplot() {
  try {
    find_gnuplot();
    return true;
  } catch (const InputError&) {
    return false;
  }
}

// A PNG file starts with its 8-byte signature and an IHDR chunk holding width and height.
std::pair<int, int> png_size(const fs::path& path) {
  const std::string bytes = read(path);
  if (bytes.size() < 24 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return {0, 0};
  const auto be32 = [&](std::size_t at) {
    return (static_cast<unsigned char>(bytes[at]) << 24) |
           (static_cast<unsigned char>(bytes[at + 1]) << 16) |
           (static_cast<unsigned char>(bytes[at + 2]) << 8) |
           static_cast<unsigned char>(bytes[at + 3]);
  };
  return {be32(16), be32(20)};
}

TEST(Plot, ScriptHoldsItsDataLabelsAndRange) {
  Plot p{.title = "it's \"quoted\"", .xlabel = "x", .ylabel = "y", .yrange = "[0:1.05]"};
  p.series.push_back({.title = "a", .x = {1, 2}, .y = {0.5, NAN}, .style = "steps"});
  p.labels.push_back({1, 0.5, "1"});
  const std::string s = gnuplot_script(p, "/tmp/o'ut.png");
  EXPECT_NE(s.find("set output '/tmp/o''ut.png'"), std::string::npos) << s;
  EXPECT_NE(s.find("set title \"it's \\\"quoted\\\"\""), std::string::npos) << s;
  EXPECT_NE(s.find("set yrange [0:1.05]"), std::string::npos);
  EXPECT_EQ(s.find("set yrange [0:*]"), std::string::npos);  // yrange wins over y_from_zero
  EXPECT_NE(s.find("set label '1' at 1,0.5"), std::string::npos);
  EXPECT_NE(s.find("with steps title 'a'"), std::string::npos);
  EXPECT_NE(s.find("1 0.5\n2 NaN\ne\n"), std::string::npos);  // NaN: a gap gnuplot skips
  EXPECT_NE(s.find("size 900,560"), std::string::npos);
}

TEST(Plot, RenderWritesAPngAndReportsGnuplotsError) {
  if (!has_gnuplot()) GTEST_SKIP() << "gnuplot is not installed (gnuplot-nox)";
  TempDir dir;
  Plot p{.title = "t", .width = 640, .height = 400};
  p.series.push_back({.title = "a", .x = {0, 1, 2}, .y = {1, 3, 2}});
  render_plot(p, dir.path() / "a.png", find_gnuplot());
  EXPECT_EQ(png_size(dir.path() / "a.png"), std::make_pair(640, 400));
  EXPECT_FALSE(fs::exists(dir.path() / "a.png.gp.tmp"));  // the script is not left behind
  p.series[0].style = "no-such-style";
  try {
    render_plot(p, dir.path() / "b.png", find_gnuplot());
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("gnuplot could not draw"), std::string::npos) << e.what();
  }
  EXPECT_THROW(render_plot(Plot{}, dir.path() / "c.png", find_gnuplot()), InputError);
}

TEST(Plot, MissingGnuplotNamesThePackage) {
  const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", "/nonexistent", 1);
  testing::expect_input_error([] { find_gnuplot(); }, {"gnuplot is not installed", "gnuplot-nox"});
  ::setenv("PATH", saved.c_str(), 1);
}

TEST(RunReportPage, EscapesAndSaysWhatIsMissing) {
  EXPECT_EQ(html_escape("<a href=\"x\">&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
  TempDir dir;
  write(
      dir.path() / "metrics.jsonl",
      R"({"epoch": 1, "train_loss": 0.5, "train_accuracy": 0.8, "test_loss": 0.4, "test_accuracy": 0.9})"
      "\n");
  write(dir.path() / "config.toml", "[run]\nname = \"<b>x</b>\"\n");
  const RunRecords records = read_run_records(dir.path());
  const std::vector<Figure> figures = run_figures(records);
  ASSERT_EQ(figures.size(), 6u);
  EXPECT_TRUE(figures[0].plot && figures[1].plot);  // per-epoch loss and accuracy
  EXPECT_FALSE(figures[2].plot);                    // samples/s: the line has none
  EXPECT_FALSE(figures[3].plot);                    // data wait: no profile, no steps
  EXPECT_FALSE(figures[5].plot);                    // no timeline
  const std::string html = report_html(records, figures, "now");
  EXPECT_NE(html.find("<title>conflux report: &lt;b&gt;x&lt;/b&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<img src=\"loss.png\""), std::string::npos);
  EXPECT_EQ(html.find("<img src=\"data-wait.png\""), std::string::npos);
  EXPECT_NE(html.find("Not drawn: no profile-trainer&lt;t&gt;.jsonl"), std::string::npos);
  EXPECT_NE(html.find("summary.json is missing"), std::string::npos);
  EXPECT_NE(html.find("1 of ? finished"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // nothing runs, nothing is fetched
}

// A steps.jsonl line as the train area writes it (telemetry::StepRecord), with a gradient norm
// when given one.
std::string step_line(int step, double wait, double ratio, double grad_norm = NAN) {
  telemetry::StepRecord r;
  r.step = static_cast<std::size_t>(step);
  r.epoch = 1;
  r.epoch_step = static_cast<std::size_t>(step);
  r.steps_in_epoch = 4;
  r.time_s = step;
  r.loss = 1.0 / step;
  r.data_wait_ms = wait;
  r.offload_ratio = ratio;
  if (!std::isnan(grad_norm)) r.grad_norm = grad_norm;
  return telemetry::record_json(r) + "\n";
}

const Series* right_axis_series(const Figure& f) {
  if (!f.plot) return nullptr;
  for (const Series& s : f.plot->series)
    if (s.right_axis) return &s;
  return nullptr;
}

TEST(RunReport, TheLossFigureDrawsTheGradientNormOnItsOwnAxis) {
  TempDir dir;
  write(dir.path() / "steps.jsonl", step_line(2, 1, 0) + step_line(4, 1, 0));
  std::vector<Figure> figures = run_figures(read_run_records(dir.path()));
  ASSERT_TRUE(figures[0].plot);
  EXPECT_EQ(right_axis_series(figures[0]), nullptr);  // no clipping, no norm
  EXPECT_EQ(gnuplot_script(*figures[0].plot, "l.png").find("y2"), std::string::npos);

  write(dir.path() / "steps.jsonl", step_line(2, 1, 0, 2.5) + step_line(4, 1, 0, 1.5));
  figures = run_figures(read_run_records(dir.path()));
  ASSERT_EQ(figures.size(), 6u);
  ASSERT_TRUE(figures[0].plot);
  const Series* norms = right_axis_series(figures[0]);
  ASSERT_NE(norms, nullptr);
  EXPECT_EQ(norms->y, (std::vector<double>{2.5, 1.5}));
  EXPECT_EQ(norms->x, (std::vector<double>{0.5, 1.0}));  // the loss's epoch positions
  EXPECT_NE(figures[0].caption.find("grad_norm"), std::string::npos);
  EXPECT_FALSE(figures[1].plot);  // these lines hold no accuracy
  const std::string script = gnuplot_script(*figures[0].plot, "l.png");
  EXPECT_NE(script.find("set y2label 'gradient L2 norm'"), std::string::npos) << script;
  EXPECT_NE(script.find("using 1:2 axes x1y2 with lines"), std::string::npos) << script;
}

TEST(RunReport, DataWaitAndOffloadArePerTrainerElseFromSteps) {
  TempDir dir;
  write(dir.path() / "steps.jsonl", step_line(2, 7, 0.25) + step_line(4, 9, 0.5));
  std::vector<Figure> figures = run_figures(read_run_records(dir.path()));
  for (const int i : {3, 4}) {  // data wait, offload ratio
    ASSERT_TRUE(figures[i].plot) << figures[i].missing;
    ASSERT_EQ(figures[i].plot->series.size(), 1u);
    EXPECT_EQ(figures[i].plot->series[0].title, "rank 0, per report (steps.jsonl)");
    EXPECT_EQ(figures[i].plot->series[0].x, (std::vector<double>{2, 4}));
  }
  EXPECT_EQ(figures[3].plot->series[0].y, (std::vector<double>{7, 9}));
  EXPECT_EQ(figures[4].plot->series[0].y, (std::vector<double>{0.25, 0.5}));

  telemetry::WindowRecord w;
  w.t_s = 1;
  w.window_s = 2;
  w.data_wait_ms = 3;
  w.offload_ratio = 0.5;
  write(dir.path() / "profile-trainer1.jsonl", telemetry::record_json(w) + "\n");
  figures = run_figures(read_run_records(dir.path()));
  ASSERT_EQ(figures[3].plot->series.size(), 1u);  // the profile replaces rank 0's steps
  EXPECT_EQ(figures[3].plot->series[0].title, "trainer 1");
  EXPECT_EQ(figures[3].plot->series[0].x, (std::vector<double>{2}));  // the window's middle
  EXPECT_EQ(figures[3].plot->series[0].y, (std::vector<double>{3}));
  ASSERT_EQ(figures[4].plot->series.size(), 1u);                         // no decisions: no marks
  EXPECT_EQ(figures[4].plot->series[0].x, (std::vector<double>{1, 3}));  // held to its end
  EXPECT_EQ(figures[4].plot->series[0].y, (std::vector<double>{0.5, 0.5}));
}

TEST(RunReport, WritesThePageAndItsPngs) {
  if (!has_gnuplot()) GTEST_SKIP() << "gnuplot is not installed (gnuplot-nox)";
  TempDir dir;
  const fs::path run = dir.path() / "run";
  write(run / "summary.json",
        R"({"name": "demo", "digest": "d1g35t", "final_test_accuracy": 0.9})");
  write(
      run / "metrics.jsonl",
      R"({"epoch": 1, "train_loss": 0.5, "train_accuracy": 0.8, "test_loss": 0.4, "test_accuracy": 0.9, "samples_per_s": 10, "elapsed_seconds": 1})"
      "\n"
      R"({"epoch": 2, "train_loss": 0.3, "train_accuracy": 0.85, "test_loss": 0.35, "test_accuracy": 0.91, "samples_per_s": 12, "elapsed_seconds": 2})"
      "\n");
  // A stale image from an earlier report, of a figure this run cannot draw.
  write(dir.path() / "out" / "checkpoints.png", "old");
  const fs::path page = write_run_report(run, dir.path() / "out");
  EXPECT_EQ(page, dir.path() / "out" / "index.html");
  const std::string html = read(page);
  EXPECT_NE(html.find("d1g35t"), std::string::npos);
  for (const char* png : {"loss.png", "accuracy.png", "throughput.png"}) {
    EXPECT_EQ(png_size(dir.path() / "out" / png), std::make_pair(900, 560)) << png;
    EXPECT_NE(html.find(fmt::format("<img src=\"{}\"", png)), std::string::npos) << png;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "checkpoints.png"));
  EXPECT_FALSE(fs::exists(dir.path() / "out" / "offload.png"));
  testing::expect_input_error([&] { write_run_report(dir.path() / "none", dir.path() / "o2"); },
                              {(dir.path() / "none").string()});
}

}  // namespace
}  // namespace conflux::report
