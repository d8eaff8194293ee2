#pragma once
/// @file run_dir.hpp
/// The run's directories for the job's life: locked against a second job, and checked to be
/// writable at start-up.

#include <string_view>
#include <vector>

#include "conflux/config/config.hpp"
#include "conflux/core/dir_lock.hpp"
#include "conflux/core/log.hpp"

namespace conflux::train {

/// Locks run.dir, and checkpoint.dir when it lies outside run.dir, for as long as the result
/// lives (hold it until the job ends), and checks that checkpoint.dir can be written. `holder`
/// describes this process for the error of a job refused the lock. BusyError (exit 4) when
/// another job holds a lock; InputError naming the key when a directory cannot be used.
std::vector<DirectoryLock> lock_run_dirs(const Config& config, std::string_view holder,
                                         const Logger& log);

}  // namespace conflux::train
