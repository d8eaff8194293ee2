#pragma once
// The measured Lambda-S3 transfer tables of the shared data folder, loaded once per test run.

#include "conflux/plan/s3_transfer.hpp"
#include "data_dir.hpp"

namespace conflux::testing {

inline const plan::S3TransferTable& s3_table() {
  static const plan::S3TransferTable table =
      plan::S3TransferTable::load(data_dir() / "lambda-s3-transfer");
  return table;
}

}  // namespace conflux::testing
