#include "conflux/config/environment.hpp"

#include <fmt/format.h>
#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

#include "conflux/core/error.hpp"

namespace conflux {

namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

std::string environment_data_dir() {
  if (std::string dir = env_or_empty("CONFLUX_DATA"); !dir.empty()) return dir;
  // XDG base directories: a relative $XDG_DATA_HOME is invalid and must be ignored.
  if (const std::filesystem::path xdg = env_or_empty("XDG_DATA_HOME"); xdg.is_absolute())
    return (xdg / "conflux" / "data").string();
  if (const std::filesystem::path home = env_or_empty("HOME"); home.is_absolute())
    return (home / ".local" / "share" / "conflux" / "data").string();
  return {};
}

ConfigSources environment_sources(std::vector<std::string> overrides, std::string launch_time) {
  return ConfigSources{.overrides = std::move(overrides),
                       .env_data_dir = environment_data_dir(),
                       .launch_time = std::move(launch_time),
                       .portable_results = current_blas_pin().state == BlasPin::State::kPinned};
}

BlasPin plan_blas_pin(const BlasPinInputs& in) {
  CONFLUX_REQUIRE(in.mode.empty() || in.mode == "portable" || in.mode == "native",
                  "environment variable CONFLUX_BLAS_PIN: expected portable or native, not '{}'",
                  in.mode);
  using State = BlasPin::State;
  // Native is the default: the pinned kernels cost 1.7x on an AVX-512 CPU (docs/design.md
  // invariant 8), so portability is asked for, as PyTorch's deterministic mode is.
  if (in.mode != "portable") {
    if (in.mode.empty()) return {State::kNative, false, ""};
    return {State::kNative, false,
            fmt::format("CONFLUX_BLAS_PIN=native: OpenBLAS runs {}; the model digest may differ "
                        "on another CPU model (docs/design.md invariant 8)",
                        in.coretype.empty() ? "the kernels it chose for this CPU"
                                            : "OPENBLAS_CORETYPE=" + in.coretype)};
  }
  // OpenBLAS compares the core type without case.
  if (::strcasecmp(in.coretype.c_str(), kPinnedBlasCore) == 0) return {State::kPinned, false, ""};
  if (!in.coretype.empty()) {
    return {State::kUserCore, false,
            fmt::format("OPENBLAS_CORETYPE={} is set, so conflux does not pin OpenBLAS to {}: "
                        "the model digest matches only runs with the same core type (unset it "
                        "for portable results, docs/design.md invariant 8)",
                        in.coretype, kPinnedBlasCore)};
  }
  if (!in.cpu_runs_pinned) {
    return {State::kCpuLacksAvx2, false,
            fmt::format("this CPU lacks AVX2 or FMA, so OpenBLAS cannot run its {} kernels: it "
                        "runs its own choice and the model digest may differ from that of an "
                        "AVX2 machine (docs/design.md invariant 8)",
                        kPinnedBlasCore)};
  }
  return {State::kPinned, true, ""};
}

std::string BlasPin::describe() const {
  switch (state) {
    case State::kPinned:
      return fmt::format("pinned to {} (CONFLUX_BLAS_PIN=portable): portable results",
                         kPinnedBlasCore);
    case State::kNative:
      return "not pinned (CONFLUX_BLAS_PIN=portable pins them: docs/design.md invariant 8)";
    case State::kUserCore:
      return "not pinned: the user's OPENBLAS_CORETYPE";
    case State::kCpuLacksAvx2:
      return "not pinned: this CPU lacks AVX2 or FMA";
  }
  return "unknown";
}

BlasPin current_blas_pin() {
  // __builtin_cpu_supports also checks that the OS saves the AVX registers.
  const bool avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return plan_blas_pin(
      {env_or_empty("CONFLUX_BLAS_PIN"), env_or_empty("OPENBLAS_CORETYPE"), avx2_fma});
}

BlasPin pin_blas_kernels(char** argv) {
  BlasPin pin = current_blas_pin();
  if (!pin.restart) return pin;
  // The restarted process finds OPENBLAS_CORETYPE set, so it never restarts again.
  CONFLUX_CHECK(::setenv("OPENBLAS_CORETYPE", kPinnedBlasCore, 1) == 0,
                "cannot set OPENBLAS_CORETYPE: {}", std::strerror(errno));
  ::execv("/proc/self/exe", argv);
  CONFLUX_RUNTIME_ERROR(
      "cannot restart /proc/self/exe with OPENBLAS_CORETYPE={} ({}); set OPENBLAS_CORETYPE={} "
      "yourself, or CONFLUX_BLAS_PIN=native",
      kPinnedBlasCore, std::strerror(errno), kPinnedBlasCore);
}

}  // namespace conflux
