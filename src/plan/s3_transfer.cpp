#include "conflux/plan/s3_transfer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "conflux/core/error.hpp"
#include "conflux/core/install_dirs.hpp"

namespace conflux::plan {

namespace {

using Grid = std::vector<std::vector<double>>;

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// One CSV file of numbers without a header: a rectangular grid, else InputError at file:line.
Grid read_grid(const std::filesystem::path& path) {
  std::ifstream in(path);
  CONFLUX_REQUIRE(in.good(), "{}: cannot open the S3 transfer table file", path.string());
  Grid grid;
  std::string line;
  int number = 0;
  int blank_since = 0;  // a blank line is only allowed at the end
  while (std::getline(in, line)) {
    ++number;
    line = trim(line);
    if (line.empty()) {
      if (blank_since == 0) blank_since = number;
      continue;
    }
    CONFLUX_REQUIRE(blank_since == 0, "{}:{}: blank line inside the table", path.string(),
                    blank_since);
    std::vector<double> row;
    std::stringstream cells(line);
    std::string cell;
    int column = 0;
    while (std::getline(cells, cell, ',')) {
      ++column;
      cell = trim(cell);
      char* end = nullptr;
      errno = 0;
      const double value = std::strtod(cell.c_str(), &end);
      CONFLUX_REQUIRE(
          !cell.empty() && end == cell.c_str() + cell.size() && errno == 0 && std::isfinite(value),
          "{}:{}: column {}: '{}' is not a finite number", path.string(), number, column, cell);
      row.push_back(value);
    }
    // getline drops an empty last cell ("1,2,"); count it so that the row shows as ragged.
    if (line.back() == ',') row.push_back(std::nan(""));
    CONFLUX_REQUIRE(grid.empty() || row.size() == grid.front().size(),
                    "{}:{}: {} columns, but line 1 has {}; every row holds one object size "
                    "at the same memory sizes",
                    path.string(), number, row.size(), grid.empty() ? 0 : grid.front().size());
    CONFLUX_REQUIRE(std::all_of(row.begin(), row.end(), [](double v) { return !std::isnan(v); }),
                    "{}:{}: empty last column", path.string(), number);
    grid.push_back(std::move(row));
  }
  CONFLUX_REQUIRE(!grid.empty(), "{}: empty file; expected rows of comma-separated numbers",
                  path.string());
  return grid;
}

// Piecewise-linear interpolation of (x, y), clamped to the end values outside [x0, xn].
double interpolate_row(const std::vector<double>& x, const std::vector<double>& y, double at) {
  if (at <= x.front()) return y.front();
  if (at >= x.back()) return y.back();
  const auto hi = static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), at) - x.begin());
  const std::size_t lo = hi - 1;
  const double t = (at - x[lo]) / (x[hi] - x[lo]);
  // (1 - t) y0 + t y1 rather than y0 + t (y1 - y0): exact at both knots.
  return (1 - t) * y[lo] + t * y[hi];
}

}  // namespace

std::filesystem::path S3TransferTable::installed_dir() {
  return find_shared_file("lambda-s3-transfer",
                          "give the folder of the Lambda-S3 transfer tables with --s3-table DIR");
}

S3TransferTable S3TransferTable::load(const std::filesystem::path& dir) {
  const Grid f = read_grid(dir / "f.csv");
  const Grid m = read_grid(dir / "m.csv");
  const Grid up = read_grid(dir / "bw_up.csv");
  const Grid down = read_grid(dir / "bw_down.csv");
  const std::size_t cols = f.front().size();
  for (const auto& [name, grid] :
       {std::pair{"m.csv", &m}, {"bw_up.csv", &up}, {"bw_down.csv", &down}}) {
    CONFLUX_REQUIRE(grid->size() == f.size() && grid->front().size() == cols,
                    "{}: {} rows x {} columns, but f.csv has {} x {}; the four files hold one "
                    "cell per (object size, memory) point and must have the same shape",
                    (dir / name).string(), grid->size(), grid->front().size(), f.size(), cols);
  }
  std::vector<Row> rows;
  for (std::size_t r = 0; r < f.size(); ++r) {
    const auto line = static_cast<int>(r + 1);
    Row row;
    row.object_mb = f[r][0];
    for (std::size_t c = 0; c < cols; ++c) {
      CONFLUX_REQUIRE(f[r][c] == row.object_mb,
                      "{}:{}: column {} holds object size {} MB, column 1 {} MB; a row holds "
                      "one object size",
                      (dir / "f.csv").string(), line, c + 1, f[r][c], row.object_mb);
      for (const auto& [name, grid] : {std::pair{"bw_up.csv", &up}, {"bw_down.csv", &down}}) {
        CONFLUX_REQUIRE((*grid)[r][c] >= 0,
                        "{}:{}: column {}: a transfer time of {} s; times "
                        "must be >= 0",
                        (dir / name).string(), line, c + 1, (*grid)[r][c]);
      }
      CONFLUX_REQUIRE(m[r][c] > 0, "{}:{}: column {}: memory {} MB; sizes must be positive",
                      (dir / "m.csv").string(), line, c + 1, m[r][c]);
      // A memory label that repeats later in the row marks a placeholder cell: in the
      // originals the first three columns of the objects >= 22 MB are labelled 512/640/768
      // and repeat the 20 MB row's values. The later cell with that label is the measurement.
      const auto later = m[r].begin() + static_cast<std::ptrdiff_t>(c) + 1;
      if (std::find(later, m[r].end(), m[r][c]) != m[r].end()) continue;
      CONFLUX_REQUIRE(row.memory_mb.empty() || m[r][c] > row.memory_mb.back(),
                      "{}:{}: column {}: memory {} MB after {} MB; memory sizes must ascend "
                      "along a row",
                      (dir / "m.csv").string(), line, c + 1, m[r][c], row.memory_mb.back());
      row.memory_mb.push_back(m[r][c]);
      row.upload_s.push_back(up[r][c]);
      row.download_s.push_back(down[r][c]);
    }
    CONFLUX_REQUIRE(rows.empty() || row.object_mb > rows.back().object_mb,
                    "{}:{}: object size {} MB after {} MB; object sizes must ascend down the "
                    "rows",
                    (dir / "f.csv").string(), line, row.object_mb, rows.back().object_mb);
    rows.push_back(std::move(row));
  }
  return from_rows(std::move(rows), dir.string());
}

S3TransferTable S3TransferTable::from_rows(std::vector<Row> rows, std::string source) {
  CONFLUX_REQUIRE(rows.size() >= 2,
                  "{}: the S3 transfer table has {} object sizes; interpolating in size needs "
                  "at least 2",
                  source, rows.size());
  S3TransferTable table;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Row& row = rows[r];
    CONFLUX_REQUIRE(row.object_mb > 0 && (r == 0 || row.object_mb > rows[r - 1].object_mb),
                    "{}: row {}: object size {} MB; sizes must be positive and ascend", source,
                    r + 1, row.object_mb);
    CONFLUX_REQUIRE(!row.memory_mb.empty() && row.upload_s.size() == row.memory_mb.size() &&
                        row.download_s.size() == row.memory_mb.size(),
                    "{}: row {} ({} MB): {} memory sizes, {} upload and {} download times; "
                    "expected at least one and equally many of each",
                    source, r + 1, row.object_mb, row.memory_mb.size(), row.upload_s.size(),
                    row.download_s.size());
    for (std::size_t c = 0; c < row.memory_mb.size(); ++c) {
      CONFLUX_REQUIRE(row.memory_mb[c] > 0 && (c == 0 || row.memory_mb[c] > row.memory_mb[c - 1]),
                      "{}: row {} ({} MB): memory {} MB at position {}; memory sizes must be "
                      "positive and ascend",
                      source, r + 1, row.object_mb, row.memory_mb[c], c + 1);
      CONFLUX_REQUIRE(std::isfinite(row.upload_s[c]) && row.upload_s[c] >= 0 &&
                          std::isfinite(row.download_s[c]) && row.download_s[c] >= 0,
                      "{}: row {} ({} MB) at {} MB: transfer times must be finite and >= 0, "
                      "got {} s up and {} s down",
                      source, r + 1, row.object_mb, row.memory_mb[c], row.upload_s[c],
                      row.download_s[c]);
      table.knots_.push_back(row.memory_mb[c]);
    }
  }
  std::sort(table.knots_.begin(), table.knots_.end());
  table.knots_.erase(std::unique(table.knots_.begin(), table.knots_.end()), table.knots_.end());
  table.rows_ = std::move(rows);
  table.source_ = std::move(source);
  return table;
}

double S3TransferTable::interpolate(double memory_mb, double object_mb, bool upload) const {
  const auto value = [&](const Row& row) {
    // Each row over its own valid knots, clamped at its ends: below the smallest measured
    // memory nothing is known, and above 3008 MB Lambda's network does not keep growing.
    return interpolate_row(row.memory_mb, upload ? row.upload_s : row.download_s, memory_mb);
  };
  // Below the smallest object the time is a latency floor; above the largest it grows
  // linearly in size along the last segment (bandwidth-bound).
  if (object_mb <= rows_.front().object_mb) return value(rows_.front());
  std::size_t hi = static_cast<std::size_t>(
      std::upper_bound(rows_.begin(), rows_.end(), object_mb,
                       [](double v, const Row& row) { return v < row.object_mb; }) -
      rows_.begin());
  hi = std::min(hi, rows_.size() - 1);
  const std::size_t lo = hi - 1;
  const double t = (object_mb - rows_[lo].object_mb) / (rows_[hi].object_mb - rows_[lo].object_mb);
  return (1 - t) * value(rows_[lo]) + t * value(rows_[hi]);
}

double S3TransferTable::upload_seconds(double memory_mb, double object_mb) const {
  return interpolate(memory_mb, object_mb, true);
}

double S3TransferTable::download_seconds(double memory_mb, double object_mb) const {
  return interpolate(memory_mb, object_mb, false);
}

}  // namespace conflux::plan
