#pragma once
/// @file turbojpeg_handle.hpp
/// An owned TurboJPEG handle (libjpeg-turbo). A handle holds per-image decoder state, so it
/// must never be used by two threads at once: decoders keep one per thread
/// (TurboJpegHandle::thread_decompressor), everything else owns its own.

namespace conflux::data {

/// The TurboJPEG flags of every JPEG decode in conflux (accurate integer IDCT, warnings are
/// errors, limited progressive scans; turbojpeg_handle.cpp says why). Public so that a
/// benchmark's plain TurboJPEG baseline decodes exactly as conflux does.
int turbojpeg_decode_flags() noexcept;

/// A TurboJPEG compressor or decompressor handle, destroyed with the object. Move-only.
class TurboJpegHandle {
 public:
  /// A new decompressor; RuntimeError when TurboJPEG cannot make one.
  static TurboJpegHandle decompressor();
  /// A new compressor; RuntimeError when TurboJPEG cannot make one.
  static TurboJpegHandle compressor();
  /// The calling thread's own decompressor, made on first use and destroyed at thread exit.
  static void* thread_decompressor();
  /// Replaces the calling thread's decompressor with a new one. Call it after any failed
  /// call: libjpeg-turbo 2.1's tjDecompressHeader3 leaves a failed read's state in the handle,
  /// and the next image's header is then parsed from the middle of the old one.
  static void renew_thread_decompressor();

  ~TurboJpegHandle();
  TurboJpegHandle(TurboJpegHandle&& other) noexcept;
  TurboJpegHandle& operator=(TurboJpegHandle&& other) noexcept;
  TurboJpegHandle(const TurboJpegHandle&) = delete;
  TurboJpegHandle& operator=(const TurboJpegHandle&) = delete;

  /// The tjhandle (a void* in turbojpeg.h, kept opaque here so that this header does not
  /// pull turbojpeg.h into every includer).
  void* get() const noexcept { return handle_; }

 private:
  explicit TurboJpegHandle(void* handle) noexcept : handle_(handle) {}
  void* handle_ = nullptr;
};

}  // namespace conflux::data
