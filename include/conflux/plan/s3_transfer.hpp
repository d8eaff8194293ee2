#pragma once
/// @file s3_transfer.hpp
/// Measured Lambda-to-S3 transfer times (FasDL's table, share/conflux/lambda-s3-transfer) and
/// their interpolation: the communication term of the Lambda cost model. For any fixed object
/// size the interpolated time is piecewise linear in memory with knots memory_knots() and
/// constant outside them, which the planner's bounds rely on.

#include <filesystem>
#include <string>
#include <vector>

namespace conflux::plan {

/// Upload and download seconds of one object to / from S3 by function memory and object size.
class S3TransferTable {
 public:
  /// One measured object size: its valid memory grid (strictly ascending) and the times there.
  struct Row {
    double object_mb = 0;            ///< object size
    std::vector<double> memory_mb;   ///< function memory sizes, ascending
    std::vector<double> upload_s;    ///< seconds per PUT at each memory size
    std::vector<double> download_s;  ///< seconds per GET at each memory size
  };

  /// Reads f.csv, m.csv, bw_up.csv and bw_down.csv (same shape, no header) from `dir`. Cells
  /// whose memory label repeats later in their row are placeholders (the originals' first
  /// three columns for objects >= 22 MB) and are dropped. InputError with file:line on a
  /// missing, ragged, non-numeric or inconsistent file.
  static S3TransferTable load(const std::filesystem::path& dir);
  /// The tables shipped with conflux: share/conflux/lambda-s3-transfer of the installation or
  /// source tree the running executable belongs to (core/install_dirs). InputError naming
  /// where it looked, and --s3-table, when they are not there.
  static std::filesystem::path installed_dir();
  /// A table from clean rows (ascending object sizes, ascending memory per row); InputError
  /// when they are not.
  static S3TransferTable from_rows(std::vector<Row> rows, std::string source = "rows");

  /// Seconds to upload an `object_mb` object from a function with `memory_mb`.
  double upload_seconds(double memory_mb, double object_mb) const;
  /// Seconds to download an `object_mb` object into a function with `memory_mb`.
  double download_seconds(double memory_mb, double object_mb) const;
  /// Every memory size at which some row was measured, ascending: for a fixed object size
  /// both times are linear between consecutive knots and constant below the first and above
  /// the last.
  const std::vector<double>& memory_knots() const noexcept { return knots_; }
  /// The rows, ascending in object size.
  const std::vector<Row>& rows() const noexcept { return rows_; }
  /// Where the table came from (directory or "rows"), for reports.
  const std::string& source() const noexcept { return source_; }

 private:
  S3TransferTable() = default;
  double interpolate(double memory_mb, double object_mb, bool upload) const;

  std::vector<Row> rows_;
  std::vector<double> knots_;
  std::string source_;
};

}  // namespace conflux::plan
