#pragma once
/// @file environment.hpp
/// The one reader of the process environment for configuration (docs/design.md, "Data
/// directory"): `conflux` (its commands in src/cli) and `conflux-bench` build their ConfigSources
/// here, so both find the data the same way. Nothing else reads $CONFLUX_DATA, $XDG_DATA_HOME
/// or $HOME. It also decides which OpenBLAS kernels `conflux` runs ($CONFLUX_BLAS_PIN,
/// $OPENBLAS_CORETYPE: docs/design.md invariant 8).

#include <string>
#include <vector>

#include "conflux/config/config.hpp"

namespace conflux {

/// The data directory the environment gives: $CONFLUX_DATA when set and not empty, else the
/// per-user default CONFLUX_USER_DATA_DIR ($XDG_DATA_HOME/conflux/data when $XDG_DATA_HOME is
/// an absolute path, as the XDG base directory specification asks, else
/// $HOME/.local/share/conflux/data). Empty when none of them is usable. Never relative to the
/// working directory unless $CONFLUX_DATA itself is relative (then the user asked for it).
std::string environment_data_dir();

/// ConfigSources with `overrides`, `launch_time` and environment_data_dir().
ConfigSources environment_sources(std::vector<std::string> overrides, std::string launch_time);

/// The OpenBLAS kernel family conflux pins (docs/design.md invariant 8): Haswell's kernels need
/// only AVX2 and FMA, so every x86-64 CPU with AVX2 runs the same instructions in the same order.
inline constexpr const char* kPinnedBlasCore = "Haswell";

/// What plan_blas_pin() decides from: the environment and the CPU.
struct BlasPinInputs {
  std::string mode;              ///< $CONFLUX_BLAS_PIN: "portable", or "native" (also when empty)
  std::string coretype;          ///< $OPENBLAS_CORETYPE, empty when unset
  bool cpu_runs_pinned = false;  ///< the CPU (and the OS) support AVX2 and FMA
};

/// What conflux does about OpenBLAS's per-CPU kernel choice.
struct BlasPin {
  /// Whose kernels OpenBLAS runs.
  enum class State {
    kPinned,        ///< kPinnedBlasCore: the digest is the same on every AVX2 CPU
    kNative,        ///< the default: OpenBLAS's choice (or the user's core type)
    kUserCore,      ///< the user's $OPENBLAS_CORETYPE, respected
    kCpuLacksAvx2,  ///< the pinned kernels cannot run here: OpenBLAS's choice
  };
  State state = State::kNative;
  /// Set OPENBLAS_CORETYPE=kPinnedBlasCore and start the program again: OpenBLAS reads it only
  /// while it loads, before main().
  bool restart = false;
  /// The one log line rank 0 prints about it; empty when results are portable.
  std::string note;
  /// For `conflux --version`: whether conflux pinned the kernels, and why not.
  std::string describe() const;
};

/// The decision alone (no environment, no CPU query); InputError for a CONFLUX_BLAS_PIN other
/// than portable, native or empty.
BlasPin plan_blas_pin(const BlasPinInputs& inputs);

/// plan_blas_pin() of this process's environment and CPU.
BlasPin current_blas_pin();

/// Called first in main(), before MPI and before any thread: when current_blas_pin() asks for a
/// restart, sets OPENBLAS_CORETYPE and replaces the process with /proc/self/exe and the same
/// `argv` (the PID and the launcher's environment stay, so mpirun and srun ranks still start
/// MPI). Returns the decision when no restart is needed; RuntimeError when the restart fails.
BlasPin pin_blas_kernels(char** argv);

}  // namespace conflux
