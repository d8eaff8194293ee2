#include "conflux/data/io/turbojpeg_handle.hpp"

#include <turbojpeg.h>

#include <utility>

#include "conflux/core/error.hpp"

namespace conflux::data {

int turbojpeg_decode_flags() noexcept {
  // TJFLAG_ACCURATEDCT: the accurate integer IDCT, whose pixels do not depend on the CPU's
  //   SIMD extensions (jpeg_decode.cpp).
  // TJFLAG_STOPONWARNING: a warning (e.g. "Premature end of JPEG file") means a damaged file,
  //   which libjpeg would otherwise finish with grey filler; it is an error here, and stopping
  //   at once saves decoding the rest.
  // TJFLAG_LIMITSCANS: a progressive JPEG with an absurd number of scans (a known
  //   denial-of-service shape) is refused rather than decoded for minutes.
  return TJFLAG_ACCURATEDCT | TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
}

TurboJpegHandle TurboJpegHandle::decompressor() {
  tjhandle handle = tjInitDecompress();
  CONFLUX_CHECK(handle != nullptr, "TurboJPEG: cannot create a decompressor: {}",
                tjGetErrorStr2(nullptr));
  return TurboJpegHandle(handle);
}

TurboJpegHandle TurboJpegHandle::compressor() {
  tjhandle handle = tjInitCompress();
  CONFLUX_CHECK(handle != nullptr, "TurboJPEG: cannot create a compressor: {}",
                tjGetErrorStr2(nullptr));
  return TurboJpegHandle(handle);
}

namespace {

// One per thread: a handle carries the state of the image being decoded.
TurboJpegHandle& thread_slot() {
  thread_local TurboJpegHandle handle = TurboJpegHandle::decompressor();
  return handle;
}

}  // namespace

void* TurboJpegHandle::thread_decompressor() {
  return thread_slot().get();
}

void TurboJpegHandle::renew_thread_decompressor() {
  thread_slot() = decompressor();
}

TurboJpegHandle::~TurboJpegHandle() {
  if (handle_ != nullptr) tjDestroy(handle_);
}

TurboJpegHandle::TurboJpegHandle(TurboJpegHandle&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)) {}

TurboJpegHandle& TurboJpegHandle::operator=(TurboJpegHandle&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) tjDestroy(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

}  // namespace conflux::data
