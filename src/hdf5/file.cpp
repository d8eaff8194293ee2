// h5::File: creating, opening and closing files, and their groups and links. Datasets are in
// datasets.cpp, attributes in attributes.cpp.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <unistd.h>

#include <system_error>

#include "conflux/hdf5/file.hpp"

namespace conflux::h5 {

namespace fs = std::filesystem;

std::string dims_string(std::span<const hsize_t> dims) {
  return fmt::format("[{}]", fmt::join(dims, ","));
}

File::File(std::unique_lock<std::recursive_mutex> lock, std::string label)
    : lock_(std::move(lock)), label_(std::move(label)) {
  silence_error_stack();
}

File File::create(const fs::path& path, const CreateOptions& options) {
  File file(lock_library(), path.string());
  const std::string& label = file.label_;
  const Handle access{CONFLUX_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS), label, "")};
  if (options.v18_objects) {
    CONFLUX_H5_CHECK(H5Pset_libver_bounds(access.get(), H5F_LIBVER_V18, H5F_LIBVER_V18), label, "");
  }
  if (options.strict_close) {
    CONFLUX_H5_CHECK(H5Pset_fclose_degree(access.get(), H5F_CLOSE_SEMI), label, "");
  }
  if (options.create_parent_groups || options.utf8_link_names) {
    file.link_create_ = Handle{CONFLUX_H5_CHECK(H5Pcreate(H5P_LINK_CREATE), label, "")};
    const hid_t lcpl = file.link_create_.get();
    if (options.create_parent_groups) {
      CONFLUX_H5_CHECK(H5Pset_create_intermediate_group(lcpl, 1), label, "");
    }
    if (options.utf8_link_names) {
      CONFLUX_H5_CHECK(H5Pset_char_encoding(lcpl, H5T_CSET_UTF8), label, "");
    }
  }
  file.file_ = Handle{CONFLUX_H5_CHECK(
      H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), label, "")};
  file.writable_ = true;
  file.discard_unless_closed_ = true;
  file.no_object_times_ = options.no_object_times;
  return file;
}

File File::open(const fs::path& path, const OpenOptions& options) {
  File file(lock_library(), options.label.empty() ? path.string() : options.label);
  const std::string& label = file.label_;
  std::error_code ec;
  CONFLUX_REQUIRE(fs::exists(path, ec), "{}: no such file", label);
  CONFLUX_REQUIRE(fs::is_regular_file(path, ec), "{}: not a regular file", label);
  file.size_at_open_ = fs::file_size(path, ec);
  CONFLUX_REQUIRE(!ec, "{}: cannot read it: {}", label, ec.message());
  CONFLUX_REQUIRE(H5Fis_hdf5(path.c_str()) > 0, "{}: truncated or not an HDF5 file", label);
  const Handle access{CONFLUX_H5_CHECK(H5Pcreate(H5P_FILE_ACCESS), label, "")};
  if (options.chunk_cache_bytes > 0) {
    // 12421 slots: a prime well above the chunks a cache of a few hundred MB holds.
    CONFLUX_H5_CHECK(H5Pset_cache(access.get(), 0, 12421, options.chunk_cache_bytes, 0.75), label,
                     "");
  }
  const hid_t id =
      H5Fopen(path.c_str(), options.writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, access.get());
  CONFLUX_REQUIRE(id >= 0, "{}: truncated or not an HDF5 file ({})", label, error_cause());
  file.file_ = Handle{id};
  file.writable_ = options.writable;
  return file;
}

File::~File() {
  if (file_ && discard_unless_closed_) discard();
}

void File::close() {
  if (!file_) return;
  if (writable_) CONFLUX_H5_CHECK(H5Fflush(file_.get(), H5F_SCOPE_LOCAL), label_, "");
  // Every other handle of the file is closed by now: a failed final write shows here.
  CONFLUX_H5_CHECK(H5Fclose(file_.release()), label_, "");
}

// HDF5 1.10 flushes again when a file is closed; when that flush fails too (the disk is still
// full), the file's identifier is left dangling and the library crashes when it shuts down at
// exit. So the file's descriptor is first pointed at an anonymous memory file, where the last
// writes succeed and vanish. (The caller removes the half-written file.)
void File::discard() noexcept {
  void* handle = nullptr;
  if (H5Fget_vfd_handle(file_.get(), H5P_DEFAULT, &handle) >= 0 && handle != nullptr) {
    const int fd = *static_cast<int*>(handle);
    const int sink = ::memfd_create("conflux-discarded-hdf5", MFD_CLOEXEC);
    if (sink >= 0) {
      ::dup2(sink, fd);
      ::close(sink);
    }
  }
  file_ = Handle();  // closes it; errors are moot
}

bool File::exists(const std::string& path) const {
  // H5Lexists fails (rather than answering no) when a group on the way is missing, so the
  // path is walked one component at a time.
  std::size_t begin = path.starts_with('/') ? 1 : 0;
  while (begin < path.size()) {
    const std::size_t end = path.find('/', begin);
    const std::string prefix = path.substr(0, end);
    if (CONFLUX_H5_CHECK(H5Lexists(file_.get(), prefix.c_str(), H5P_DEFAULT), label_, path) <= 0) {
      return false;
    }
    if (end == std::string::npos) return true;
    // Only a group leads further; a component that cannot be opened as one leads nowhere.
    const Handle object{H5Oopen(file_.get(), prefix.c_str(), H5P_DEFAULT)};
    if (!object || H5Iget_type(object.get()) != H5I_GROUP) return false;
    begin = end + 1;
  }
  return true;
}

void File::require_group(const std::string& path) const {
  CONFLUX_REQUIRE(exists(path), "{}: missing group {}", label_, path);
  const Handle group{H5Gopen2(file_.get(), path.c_str(), H5P_DEFAULT)};
  CONFLUX_REQUIRE(group, "{}: {} is not a group", label_, path);
}

std::uint64_t File::link_count(const std::string& path) const {
  require_group(path);
  const Handle group{
      CONFLUX_H5_CHECK(H5Gopen2(file_.get(), path.c_str(), H5P_DEFAULT), label_, path)};
  H5G_info_t info;
  CONFLUX_H5_CHECK(H5Gget_info(group.get(), &info), label_, path);
  return info.nlinks;
}

void File::create_group(const std::string& path) {
  const hid_t lcpl = link_create_ ? link_create_.get() : H5P_DEFAULT;
  const Handle create{CONFLUX_H5_CHECK(H5Pcreate(H5P_GROUP_CREATE), label_, path)};
  if (no_object_times_) CONFLUX_H5_CHECK(H5Pset_obj_track_times(create.get(), 0), label_, path);
  const Handle group{CONFLUX_H5_CHECK(
      H5Gcreate2(file_.get(), path.c_str(), lcpl, create.get(), H5P_DEFAULT), label_, path)};
}

Handle File::open_object(const std::string& path) const {
  CONFLUX_REQUIRE(exists(path), "{}: missing object {}", label_, path);
  return Handle{CONFLUX_H5_CHECK(H5Oopen(file_.get(), path.c_str(), H5P_DEFAULT), label_, path)};
}

}  // namespace conflux::h5
