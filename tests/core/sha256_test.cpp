#include "conflux/core/sha256.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "conflux/core/error.hpp"

namespace conflux::data {
namespace {

std::span<const std::byte> bytes_of(std::string_view s) {
  return std::as_bytes(std::span(s));
}

std::string hex_of(std::string_view s) {
  return sha256_hex(bytes_of(s));
}

TEST(Sha256, EmptyInput) {
  EXPECT_EQ(hex_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  EXPECT_EQ(hex_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, Fips448BitMessage) {
  EXPECT_EQ(hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, Fips896BitMessage) {
  EXPECT_EQ(
      hex_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqkl"
             "mnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionA) {
  const std::string a(1'000'000, 'a');
  EXPECT_EQ(hex_of(a), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the 55/56/64-byte padding boundaries, where the length field spills over
// into an extra block.
TEST(Sha256, PaddingBoundaries) {
  const std::vector<std::pair<std::size_t, std::string>> cases = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {57, "f13b2d724659eb3bf47f2dd6af1accc87b81f09f59f2b75e5c0bed6589dfe8c6"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
      {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
  };
  for (const auto& [length, expected] : cases) {
    EXPECT_EQ(hex_of(std::string(length, 'a')), expected) << length << " bytes";
  }
}

TEST(Sha256, MultiUpdateAtOddBoundariesMatchesOneShot) {
  const std::string a(1'000'000, 'a');
  const std::string expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  // Piece sizes that leave the 64-byte block buffer partly filled, exactly filled, and that
  // span several blocks in one call.
  for (const std::vector<std::size_t>& pieces :
       {std::vector<std::size_t>{1}, {3, 61}, {63}, {64}, {65}, {7, 129, 1000, 5}, {4093}}) {
    Sha256 sha;
    std::size_t pos = 0;
    for (std::size_t i = 0; pos < a.size(); ++i) {
      const std::size_t n = std::min(pieces[i % pieces.size()], a.size() - pos);
      sha.update(bytes_of(std::string_view(a).substr(pos, n)));
      pos += n;
    }
    EXPECT_EQ(sha.finish_hex(), expected) << "first piece " << pieces.front();
  }
}

TEST(Sha256, SplitAnywhereInMixedDataMatchesOneShot) {
  std::string data(1000, '\0');
  std::uint32_t x = 12345;
  for (auto& c : data) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  const std::string whole = hex_of(data);
  for (std::size_t split : {0, 1, 55, 56, 63, 64, 65, 127, 128, 500, 999, 1000}) {
    Sha256 sha;
    sha.update(bytes_of(std::string_view(data).substr(0, split)));
    sha.update(bytes_of(std::string_view(data).substr(split)));
    EXPECT_EQ(sha.finish_hex(), whole) << "split at " << split;
  }
}

TEST(Sha256, FinishReturnsRawDigestOfHex) {
  Sha256 sha;
  sha.update(bytes_of("abc"));
  const auto digest = sha.finish();
  EXPECT_EQ(digest[0], 0xba);
  EXPECT_EQ(digest[1], 0x78);
  EXPECT_EQ(digest[31], 0xad);
}

TEST(Sha256, FileDigestAndMissingFile) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("conflux-sha256-test-" + std::to_string(::getpid()));
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string(3 * 1024 * 1024 + 17, 'a');  // spans several read buffers
  }
  EXPECT_EQ(sha256_file_hex(path), hex_of(std::string(3 * 1024 * 1024 + 17, 'a')));
  std::filesystem::remove(path);
  try {
    sha256_file_hex(path);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.code(), ExitCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace conflux::data
