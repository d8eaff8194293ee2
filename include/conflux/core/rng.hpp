#pragma once
/// @file rng.hpp
/// Counter-keyed random numbers. A generator is derived from a key such as
/// (seed, epoch, sample index), so the numbers it yields never depend on which thread or rank
/// asks for them (docs/design.md invariant 2).

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "conflux/core/host_device.hpp"

namespace conflux {

/// SplitMix64 finaliser: a bijective 64-bit mixer.
CONFLUX_HD constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// xoshiro256** generator seeded from a mixed key; cheap to construct per sample.
class Rng {
 public:
  /// Generator for a key of any number of 64-bit words, e.g. {seed, epoch, sample}.
  explicit Rng(std::initializer_list<std::uint64_t> key) noexcept : Rng(key.begin(), key.size()) {}
  /// The same generator for a key of `words` words at `key` (usable in device code too).
  CONFLUX_HD Rng(const std::uint64_t* key, std::size_t words) noexcept {
    std::uint64_t h = 0x6a09e667f3bcc908ULL;
    for (std::size_t i = 0; i < words; ++i) h = mix64(h ^ mix64(key[i]));
    for (auto& s : state_) {
      h = mix64(h);
      s = h;
    }
  }
  /// Next 64 random bits.
  CONFLUX_HD std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  /// Uniform float in [0, 1) with 24 random bits.
  CONFLUX_HD float uniform() noexcept { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }
  /// Uniform float in [lo, hi).
  float uniform(float lo, float hi) noexcept { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, n), n > 0 (Lemire's multiply-shift; bias < 2^-32 for small n).
  std::uint64_t below(std::uint64_t n) noexcept {
    __extension__ using u128 = unsigned __int128;  // the 64x64->128 multiply is one instruction
    return static_cast<std::uint64_t>((static_cast<u128>(next()) * n) >> 64);
  }
  /// True with probability 1/2.
  bool coin() noexcept { return (next() >> 63) != 0; }

 private:
  CONFLUX_HD static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept {
    return (x << k) | (x >> (64 - k));
  }
  std::uint64_t state_[4];
};

}  // namespace conflux
