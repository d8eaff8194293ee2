#include "conflux/data/io/file_stream.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/core/sha256.hpp"

namespace conflux::data {
namespace {

// Large enough that fread and inflate run in long bursts, small enough to stay in L2 while
// the same bytes are hashed.
constexpr std::size_t kInputBufferSize = 256 * 1024;

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

bool starts_with_gzip_magic(const std::uint8_t* p, std::size_t n) {
  return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

}  // namespace

struct FileStream::Impl {
  std::filesystem::path path;
  std::unique_ptr<std::FILE, FileCloser> file;
  std::uint64_t file_size = 0;
  std::vector<std::uint8_t> in;
  std::size_t in_pos = 0;
  std::size_t in_len = 0;
  std::uint64_t raw_read = 0;  // bytes fread from the file so far (all hashed)
  bool file_eof = false;
  Sha256 sha;
  bool gzip = false;
  z_stream zs{};
  bool zs_initialised = false;
  bool member_ended = false;  // inflate reached the end of a gzip member
  std::uint64_t offset = 0;

  ~Impl() {
    if (zs_initialised) inflateEnd(&zs);
  }

  std::string name() const { return path.string(); }

  std::uint64_t compressed_offset() const { return raw_read - (in_len - in_pos); }

  // Hashes and counts bytes that just came off the disk.
  std::size_t fread_hashed(std::uint8_t* dst, std::size_t n) {
    const std::size_t got = std::fread(dst, 1, n, file.get());
    if (got > 0) sha.update(std::as_bytes(std::span(dst, got)));
    raw_read += got;
    if (got < n) {
      if (std::ferror(file.get())) {
        CONFLUX_INPUT_ERROR("{}: read error at byte offset {} of the file: {}", name(), raw_read,
                            std::strerror(errno));
      }
      file_eof = true;
    }
    return got;
  }

  // Keeps unread bytes and appends more from the file; false when nothing new arrived.
  bool refill() {
    if (file_eof) return false;
    const std::size_t keep = in_len - in_pos;
    if (keep > 0 && in_pos > 0) std::memmove(in.data(), in.data() + in_pos, keep);
    in_pos = 0;
    in_len = keep;
    const std::size_t got = fread_hashed(in.data() + keep, in.size() - keep);
    in_len += got;
    return got > 0;
  }

  std::size_t read_plain(std::uint8_t* dst, std::size_t n) {
    std::size_t done = std::min(n, in_len - in_pos);
    std::memcpy(dst, in.data() + in_pos, done);
    in_pos += done;
    // Large reads bypass the buffer: straight from the file into the caller's memory.
    if (n - done >= in.size() && !file_eof) done += fread_hashed(dst + done, n - done);
    while (done < n && refill()) {
      const std::size_t take = std::min(n - done, in_len - in_pos);
      std::memcpy(dst + done, in.data() + in_pos, take);
      in_pos += take;
      done += take;
    }
    return done;
  }

  std::size_t read_gzip(std::uint8_t* dst, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      if (member_ended) {
        // Another member may follow (concatenated gzip files are valid gzip); anything else
        // after the stream means the file is not what it claims to be.
        if (in_len - in_pos < 2) refill();
        if (in_pos == in_len) break;
        if (!starts_with_gzip_magic(in.data() + in_pos, in_len - in_pos)) {
          CONFLUX_INPUT_ERROR(
              "{}: trailing garbage after the gzip stream at compressed byte offset {} "
              "(decompressed byte offset {})",
              name(), compressed_offset(), offset + done);
        }
        if (inflateReset(&zs) != Z_OK) {
          CONFLUX_RUNTIME_ERROR("{}: zlib inflateReset failed", name());
        }
        member_ended = false;
      }
      if (in_pos == in_len && !refill()) {
        CONFLUX_INPUT_ERROR(
            "{}: corrupt gzip file: the compressed stream ends unexpectedly at compressed byte "
            "offset {} (decompressed byte offset {}); the file is truncated",
            name(), compressed_offset(), offset + done);
      }
      // avail_* are 32-bit in zlib; feed at most 1 GiB of output per call.
      const std::size_t out_chunk = std::min<std::size_t>(n - done, std::size_t{1} << 30);
      zs.next_in = in.data() + in_pos;
      zs.avail_in = static_cast<uInt>(in_len - in_pos);
      zs.next_out = dst + done;
      zs.avail_out = static_cast<uInt>(out_chunk);
      const std::uint64_t compressed_at = compressed_offset();
      const int ret = inflate(&zs, Z_NO_FLUSH);
      in_pos = in_len - zs.avail_in;
      done += out_chunk - zs.avail_out;
      if (ret == Z_STREAM_END) {
        member_ended = true;
      } else if (ret == Z_MEM_ERROR) {
        throw std::bad_alloc();
      } else if (ret != Z_OK && ret != Z_BUF_ERROR) {
        CONFLUX_INPUT_ERROR(
            "{}: corrupt gzip data near compressed byte offset {} (decompressed byte offset {}): "
            "{}",
            name(), compressed_at, offset + done, zs.msg ? zs.msg : "inflate failed");
      }
    }
    return done;
  }
};

FileStream::FileStream(std::filesystem::path path) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.path = std::move(path);
  std::error_code ec;
  if (std::filesystem::is_directory(s.path, ec)) {
    CONFLUX_INPUT_ERROR("{}: is a directory, expected a data file", s.name());
  }
  errno = 0;
  s.file.reset(std::fopen(s.path.c_str(), "rb"));
  if (!s.file) CONFLUX_INPUT_ERROR("{}: cannot open: {}", s.name(), std::strerror(errno));
  s.file_size = std::filesystem::file_size(s.path, ec);
  if (ec) CONFLUX_INPUT_ERROR("{}: cannot determine size: {}", s.name(), ec.message());
  s.in.resize(kInputBufferSize);
  s.refill();
  s.gzip = starts_with_gzip_magic(s.in.data(), s.in_len);
  if (s.gzip) {
    // 16 + MAX_WBITS: gzip wrapper only, so the CRC-32 and length trailer are verified.
    if (inflateInit2(&s.zs, 16 + MAX_WBITS) != Z_OK) {
      CONFLUX_RUNTIME_ERROR("{}: zlib inflateInit2 failed", s.name());
    }
    s.zs_initialised = true;
  }
}

FileStream::~FileStream() = default;
FileStream::FileStream(FileStream&&) noexcept = default;
FileStream& FileStream::operator=(FileStream&&) noexcept = default;

const std::filesystem::path& FileStream::path() const noexcept {
  return impl_->path;
}
bool FileStream::gzip() const noexcept {
  return impl_->gzip;
}
std::uint64_t FileStream::file_size() const noexcept {
  return impl_->file_size;
}
std::uint64_t FileStream::offset() const noexcept {
  return impl_->offset;
}

std::string FileStream::where(std::uint64_t offset) const {
  return impl_->gzip ? fmt::format("byte offset {} (decompressed)", offset)
                     : fmt::format("byte offset {}", offset);
}

std::size_t FileStream::read(std::span<std::byte> dst) {
  auto* out = reinterpret_cast<std::uint8_t*>(dst.data());
  const std::size_t got =
      impl_->gzip ? impl_->read_gzip(out, dst.size()) : impl_->read_plain(out, dst.size());
  impl_->offset += got;
  return got;
}

std::uint64_t FileStream::skip_to_end() {
  std::vector<std::byte> scratch(64 * 1024);
  std::uint64_t skipped = 0;
  for (;;) {
    const std::size_t got = read(scratch);
    skipped += got;
    if (got < scratch.size()) return skipped;
  }
}

std::string FileStream::finish_sha256_hex() {
  Impl& s = *impl_;
  while (!s.file_eof) {
    s.in_pos = s.in_len = 0;
    s.refill();
  }
  return s.sha.finish_hex();
}

}  // namespace conflux::data
