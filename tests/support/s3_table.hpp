#pragma once
// The measured Lambda-S3 transfer tables shipped in share/conflux (found as conflux finds
// them, relative to the test executable), loaded once per test run.

#include "conflux/plan/s3_transfer.hpp"

namespace conflux::testing {

inline const plan::S3TransferTable& s3_table() {
  static const plan::S3TransferTable table =
      plan::S3TransferTable::load(plan::S3TransferTable::installed_dir());
  return table;
}

}  // namespace conflux::testing
