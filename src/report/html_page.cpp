#include "conflux/report/html_page.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

namespace conflux::report {

namespace {

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 2em auto; max-width: 960px; color: #222; }
h1 { margin-bottom: 0.2em; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font-family: monospace; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { color: #444; font-size: 0.92em; margin-top: 0.3em; }
.missing { color: #a33; }
ul.notes li { margin: 0.2em 0; }
)";

// A number with `decimals`, or a dash for NaN (null in the file).
std::string num(double value, int decimals) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, decimals) : std::string("–");
}

// The config.toml value at `key`, or `fallback`.
std::string setting(const RunRecords& r, const std::string& key, const std::string& fallback) {
  const auto it = r.config_values.find(key);
  return it == r.config_values.end() ? fallback : it->second;
}

std::string workers_text(const RunRecords& r) {
  const std::string configured = setting(r, "cluster.workers", "");
  if (!configured.empty() && configured != "-1") return configured;
  if (r.timeline_workers > 0) return std::to_string(r.timeline_workers);
  for (const auto& [trainer, windows] : r.profiles) {
    if (!windows.empty()) return std::to_string(windows.front().workers.size());
  }
  return "every rank that is not a trainer";
}

std::string row(std::string_view name, const std::string& value_html) {
  return fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", name, value_html);
}

std::string run_table(const RunRecords& r) {
  const auto& s = r.summary;
  const std::string missing = "<span class=\"missing\">– (no summary.json)</span>";
  std::string rows;
  rows += row("Run", html_escape(s ? s->name : setting(r, "run.name", r.dir.filename().string())));
  rows += row("Run directory", "<code>" + html_escape(r.dir.string()) + "</code>");
  rows += row("Model digest", s ? "<code>" + html_escape(s->digest) + "</code>" : missing);
  rows += row("Final test accuracy", s ? num(100 * s->final_test_accuracy, 2) + " %" : missing);
  const std::string configured = setting(r, "train.epochs", "?");
  rows +=
      row("Epochs", s ? fmt::format("{} of {}", num(s->epochs, 0), html_escape(configured))
                      : fmt::format("{} of {} finished", r.epochs.size(), html_escape(configured)));
  const double so_far = r.epochs.empty() ? NAN : r.epochs.back().elapsed_seconds;
  rows += row("Total time", s ? num(s->total_seconds, 1) + " s"
                              : num(so_far, 1) + " s up to the last finished epoch");
  rows += row("Trainers / workers", html_escape(setting(r, "cluster.trainers", "?")) + " / " +
                                        html_escape(workers_text(r)));
  rows += row("Dataset, global batch", html_escape(setting(r, "data.dataset", "?")) + ", " +
                                           html_escape(setting(r, "train.batch_size", "?")));
  rows += row("Offload ratio (config)", html_escape(setting(r, "data.offload_ratio", "?")));
  rows += row("Checkpoints every",
              html_escape(setting(r, "checkpoint.every_steps", "0")) + " steps / " +
                  html_escape(setting(r, "checkpoint.every_seconds", "0")) + " s (0: never)");
  std::string files;
  for (const auto& f : r.files)
    files += (files.empty() ? "" : ", ") + ("<code>" + html_escape(f) + "</code>");
  rows += row("Files read", files.empty() ? "none" : files);
  return "<table class=\"run\">\n" + rows + "</table>\n";
}

std::string notes_section(const RunRecords& r) {
  if (r.notes.empty()) return "";
  std::string out = "<h2>Missing or partial</h2>\n<ul class=\"notes\">\n";
  for (const auto& note : r.notes) out += "<li>" + html_escape(note) + "</li>\n";
  return out + "</ul>\n";
}

std::string figure_html(const Figure& f) {
  std::string out = fmt::format("<h2>{}</h2>\n", html_escape(f.heading));
  if (!f.plot) {
    return out + fmt::format("<p class=\"missing\">Not drawn: {}.</p>\n", html_escape(f.missing));
  }
  return out + fmt::format(
                   "<figure><img src=\"{}\" alt=\"{}\" width=\"{}\" height=\"{}\">"
                   "<figcaption>{}</figcaption></figure>\n",
                   html_escape(f.file), html_escape(f.heading), f.plot->width, f.plot->height,
                   html_escape(f.caption));
}

std::string decisions_table(const RunRecords& r) {
  if (r.decisions.empty()) return "";
  std::string out =
      "<h3>Offload decisions</h3>\n<table class=\"decisions\">\n<tr><th>#</th><th>trainer</th>"
      "<th>step</th><th>time (s)</th><th>ratio</th><th>reason</th></tr>\n";
  for (std::size_t i = 0; i < r.decisions.size(); ++i) {
    const Decision& d = r.decisions[i];
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td>{} → {}</td><td>{}</td></tr>\n",
        i + 1, d.trainer, d.step >= 0 ? num(d.step, 0) : "–", num(d.t_s, 2), num(d.from, 2),
        num(d.to, 2), html_escape(d.reason));
  }
  return out + "</table>\n";
}

std::string epochs_table(const RunRecords& r) {
  if (r.epochs.empty()) return "";
  std::string out =
      "<h2>Epochs</h2>\n<table class=\"epochs\">\n<tr><th>epoch</th><th>train loss</th>"
      "<th>train accuracy</th><th>test loss</th><th>test accuracy</th><th>samples/s</th>"
      "<th>epoch (s)</th><th>elapsed (s)</th></tr>\n";
  for (const EpochRecord& e : r.epochs) {
    out += fmt::format(
        "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{} %</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{} %</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
        e.epoch, num(e.train_loss, 4), num(100 * e.train_accuracy, 2), num(e.test_loss, 4),
        num(100 * e.test_accuracy, 2), num(e.samples_per_s, 0), num(e.epoch_seconds, 2),
        num(e.elapsed_seconds, 2));
  }
  return out + "</table>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string report_html(const RunRecords& r, const std::vector<Figure>& figures,
                        const std::string& generated) {
  const std::string name =
      r.summary ? r.summary->name : setting(r, "run.name", r.dir.filename().string());
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>conflux report: {0}</title>\n<style>{1}</style>\n</head>\n<body>\n"
      "<h1>conflux report: {0}</h1>\n<p class=\"sub\">generated {2} by <code>conflux report"
      "</code></p>\n",
      html_escape(name), kStyle, html_escape(generated));
  out += run_table(r);
  out += notes_section(r);
  for (const Figure& f : figures) {
    out += figure_html(f);
    if (f.file == "offload.png") out += decisions_table(r);
  }
  out += epochs_table(r);
  if (!r.config_text.empty()) {
    out +=
        "<h2>Config</h2>\n<details open><summary><code>config.toml</code> (the resolved "
        "config the run used)</summary>\n<pre>" +
        html_escape(r.config_text) + "</pre></details>\n";
  }
  return out + "</body>\n</html>\n";
}

}  // namespace conflux::report
