#include "conflux/core/sha256.hpp"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "conflux/core/error.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CONFLUX_SHA256_HAVE_SHANI 1
#endif

namespace conflux::data {
namespace {

constexpr std::array<std::uint32_t, 64> kK = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::array<std::uint32_t, 8> kInitialState = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

inline std::uint32_t load_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

// Portable FIPS 180-4 compression. The message schedule is kept as a 16-word ring and the
// rounds are unrolled by 8 so that the working variables never rotate through memory.
void compress_portable(std::uint32_t* state, const std::uint8_t* data, std::size_t blocks) {
  using std::rotr;
  for (; blocks > 0; --blocks, data += 64) {
    std::uint32_t w[16];
    for (int i = 0; i < 16; ++i) w[i] = load_be32(data + 4 * i);
    std::uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    std::uint32_t e = state[4], f = state[5], g = state[6], h = state[7];

// One round; W is the message-schedule word of round i.
#define CONFLUX_SHA_ROUND(a, b, c, d, e, f, g, h, i, W)                                    \
  do {                                                                                     \
    const std::uint32_t t1 =                                                               \
        h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + (W); \
    const std::uint32_t t2 =                                                               \
        (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));          \
    d += t1;                                                                               \
    h = t1 + t2;                                                                           \
  } while (0)
#define CONFLUX_SHA_EIGHT(i, W)                                 \
  do {                                                          \
    CONFLUX_SHA_ROUND(a, b, c, d, e, f, g, h, i + 0, W(i + 0)); \
    CONFLUX_SHA_ROUND(h, a, b, c, d, e, f, g, i + 1, W(i + 1)); \
    CONFLUX_SHA_ROUND(g, h, a, b, c, d, e, f, i + 2, W(i + 2)); \
    CONFLUX_SHA_ROUND(f, g, h, a, b, c, d, e, i + 3, W(i + 3)); \
    CONFLUX_SHA_ROUND(e, f, g, h, a, b, c, d, i + 4, W(i + 4)); \
    CONFLUX_SHA_ROUND(d, e, f, g, h, a, b, c, i + 5, W(i + 5)); \
    CONFLUX_SHA_ROUND(c, d, e, f, g, h, a, b, i + 6, W(i + 6)); \
    CONFLUX_SHA_ROUND(b, c, d, e, f, g, h, a, i + 7, W(i + 7)); \
  } while (0)
// Rounds 0-15 use the message words as they are; later rounds expand the ring in place.
#define CONFLUX_SHA_W_LOAD(i) w[(i)&15]
#define CONFLUX_SHA_W_EXPAND(i) expand(w, i)

    const auto expand = [](std::uint32_t* ring, int i) {
      const std::uint32_t w15 = ring[(i - 15) & 15], w2 = ring[(i - 2) & 15];
      const std::uint32_t s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >> 3);
      const std::uint32_t s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >> 10);
      return ring[i & 15] += s0 + ring[(i - 7) & 15] + s1;
    };
    CONFLUX_SHA_EIGHT(0, CONFLUX_SHA_W_LOAD);
    CONFLUX_SHA_EIGHT(8, CONFLUX_SHA_W_LOAD);
    for (int i = 16; i < 64; i += 8) CONFLUX_SHA_EIGHT(i, CONFLUX_SHA_W_EXPAND);
#undef CONFLUX_SHA_W_EXPAND
#undef CONFLUX_SHA_W_LOAD
#undef CONFLUX_SHA_EIGHT
#undef CONFLUX_SHA_ROUND

    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
  }
}

#ifdef CONFLUX_SHA256_HAVE_SHANI
// x86 SHA extensions: about 5-8x the portable speed, which is what lets a 150 MB dataset be
// hashed while it loads without dominating the load time. Selected at run time (cpuid), so
// the binary still runs on CPUs without them.
__attribute__((target("sha,sse4.1"))) void compress_shani(std::uint32_t* state,
                                                          const std::uint8_t* data,
                                                          std::size_t blocks) {
  const __m128i byteswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  // The instructions want the state as ABEF / CDGH.
  __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state)), 0xB1);
  __m128i state1 =
      _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4)), 0x1B);
  __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);
  state1 = _mm_blend_epi16(state1, tmp, 0xF0);

  for (; blocks > 0; --blocks, data += 64) {
    const __m128i abef_save = state0;
    const __m128i cdgh_save = state1;
    __m128i m[4];
    // 16 groups of 4 rounds; message words 16..63 are expanded four at a time in the ring m.
    for (int g = 0; g < 16; ++g) {
      if (g < 4) {
        m[g] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * g)),
                                byteswap);
      }
      __m128i msg = _mm_add_epi32(
          m[g & 3], _mm_loadu_si128(reinterpret_cast<const __m128i*>(kK.data() + 4 * g)));
      state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
      if (g >= 3 && g < 15) {
        __m128i& next = m[(g + 1) & 3];
        next = _mm_add_epi32(next, _mm_alignr_epi8(m[g & 3], m[(g + 3) & 3], 4));
        next = _mm_sha256msg2_epu32(next, m[g & 3]);
      }
      msg = _mm_shuffle_epi32(msg, 0x0E);
      state0 = _mm_sha256rnds2_epu32(state0, state1, msg);
      if (g >= 1 && g < 13) m[(g + 3) & 3] = _mm_sha256msg1_epu32(m[(g + 3) & 3], m[g & 3]);
    }
    state0 = _mm_add_epi32(state0, abef_save);
    state1 = _mm_add_epi32(state1, cdgh_save);
  }

  tmp = _mm_shuffle_epi32(state0, 0x1B);     // FEBA
  state1 = _mm_shuffle_epi32(state1, 0xB1);  // DCHG
  state0 = _mm_blend_epi16(tmp, state1, 0xF0);
  state1 = _mm_alignr_epi8(state1, tmp, 8);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state), state0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), state1);
}
#endif

using CompressFn = void (*)(std::uint32_t*, const std::uint8_t*, std::size_t);

CompressFn select_compress() {
#ifdef CONFLUX_SHA256_HAVE_SHANI
  __builtin_cpu_init();
  if (__builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1")) return compress_shani;
#endif
  return compress_portable;
}

void compress_blocks(std::uint32_t* state, const std::uint8_t* data, std::size_t blocks) {
  // Chosen once, on first use (a function-local static is safe even from other translation
  // units' static initialisers); one indirect call per run of blocks costs nothing measurable.
  static const CompressFn impl = select_compress();
  if (blocks > 0) impl(state, data, blocks);
}

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

}  // namespace

Sha256::Sha256() : state_(kInitialState) {}

void Sha256::compress(const std::uint8_t* block) {
  compress_blocks(state_.data(), block, 1);
}

void Sha256::update(std::span<const std::byte> bytes) {
  const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
  std::size_t size = bytes.size();
  total_bytes_ += size;
  if (buffered_ > 0) {
    const std::size_t take = std::min(size, buffer_.size() - buffered_);
    std::memcpy(buffer_.data() + buffered_, data, take);
    buffered_ += take;
    data += take;
    size -= take;
    if (buffered_ < buffer_.size()) return;
    compress(buffer_.data());
    buffered_ = 0;
  }
  const std::size_t blocks = size / 64;
  compress_blocks(state_.data(), data, blocks);
  data += blocks * 64;
  size -= blocks * 64;
  if (size > 0) std::memcpy(buffer_.data(), data, size);
  buffered_ = size;
}

std::array<std::uint8_t, 32> Sha256::finish() {
  const std::uint64_t bit_length = total_bytes_ * 8;
  buffer_[buffered_++] = 0x80;
  if (buffered_ > 56) {
    std::memset(buffer_.data() + buffered_, 0, buffer_.size() - buffered_);
    compress(buffer_.data());
    buffered_ = 0;
  }
  std::memset(buffer_.data() + buffered_, 0, 56 - buffered_);
  for (int i = 0; i < 8; ++i)
    buffer_[56 + i] = static_cast<std::uint8_t>(bit_length >> (56 - 8 * i));
  compress(buffer_.data());
  buffered_ = 0;

  std::array<std::uint8_t, 32> digest{};
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j)
      digest[4 * i + j] = static_cast<std::uint8_t>(state_[i] >> (24 - 8 * j));
  }
  return digest;
}

std::string Sha256::finish_hex() {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto digest = finish();
  std::string hex(64, '0');
  for (std::size_t i = 0; i < digest.size(); ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 15];
  }
  return hex;
}

std::string sha256_hex(std::span<const std::byte> bytes) {
  Sha256 sha;
  sha.update(bytes);
  return sha.finish_hex();
}

std::string sha256_file_hex(const std::filesystem::path& path) {
  errno = 0;
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) CONFLUX_INPUT_ERROR("{}: cannot open: {}", path.string(), std::strerror(errno));
  Sha256 sha;
  std::vector<std::byte> buffer(1 << 20);
  std::uint64_t offset = 0;
  for (;;) {
    const std::size_t got = std::fread(buffer.data(), 1, buffer.size(), file.get());
    if (got > 0) sha.update({buffer.data(), got});
    offset += got;
    if (got < buffer.size()) {
      if (std::ferror(file.get())) {
        CONFLUX_INPUT_ERROR("{}: read error at byte offset {}: {}", path.string(), offset,
                            std::strerror(errno));
      }
      break;
    }
  }
  return sha.finish_hex();
}

}  // namespace conflux::data
