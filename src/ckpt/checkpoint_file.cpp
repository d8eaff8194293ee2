#include "conflux/ckpt/checkpoint_file.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <hdf5.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <future>
#include <limits>
#include <new>
#include <span>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

#include "conflux/core/atomic_file.hpp"
#include "conflux/core/crc32c.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/hdf5.hpp"

// Throws CorruptCheckpoint (exit 2) with a fmt-formatted message.
#define CONFLUX_CORRUPT(...) \
  throw ::conflux::ckpt::CorruptCheckpoint(::fmt::format(__VA_ARGS__), __FILE__, __LINE__)

namespace conflux::ckpt {
namespace {

namespace fs = std::filesystem;

// The checksum and the numeric datasets use the in-memory bytes as the little-endian bytes
// the file stores; a big-endian port would have to byte-swap them for the checksum.
static_assert(std::endian::native == std::endian::little,
              "checkpoints assume a little-endian host");

constexpr const char* kFormat = "conflux-checkpoint";
// Version 2: the checksum is CRC-32C (version 1 used zlib's CRC-32).
constexpr int kFormatVersion = 2;
constexpr const char* kModelNamesLink = "tensor_names";
constexpr const char* kRngScheme =
    "counter-based: every random number is a pure function of Rng{seed, stream, epoch, sample} "
    "(epoch plan: Rng{seed, \"plan\", epoch}; augmentations: Rng{seed, transform stream, epoch, "
    "sample index}); there is no generator state to save, so /rng/seed together with /position "
    "is the complete random-number state of the run";

// ---------------------------------------------------------------------------------------------
// The layout: one table of datasets, used by the writer, the checksum and the reader.

enum class Type { kUint8, kUint32, kUint64, kFloat32, kFloat64, kString };

// Name of the type in the checksum stream (docs/checkpoints.md).
const char* type_tag(Type type) {
  switch (type) {
    case Type::kUint8:
      return "uint8";
    case Type::kUint32:
      return "uint32";
    case Type::kUint64:
      return "uint64";
    case Type::kFloat32:
      return "float32";
    case Type::kFloat64:
      return "float64";
    case Type::kString:
      return "string";
  }
  return "?";
}

std::size_t type_size(Type type) {
  switch (type) {
    case Type::kUint8:
      return 1;
    case Type::kUint32:
      return 4;
    case Type::kUint64:
      return 8;
    case Type::kFloat32:
      return 4;
    case Type::kFloat64:
      return 8;
    case Type::kString:
      return 0;
  }
  return 0;
}

// File type of a numeric dataset (always little-endian).
hid_t file_type(Type type) {
  switch (type) {
    case Type::kUint8:
      return H5T_STD_U8LE;
    case Type::kUint32:
      return H5T_STD_U32LE;
    case Type::kUint64:
      return H5T_STD_U64LE;
    case Type::kFloat32:
      return H5T_IEEE_F32LE;
    case Type::kFloat64:
      return H5T_IEEE_F64LE;
    case Type::kString:
      break;
  }
  return H5I_INVALID_HID;
}

hid_t memory_type(Type type) {
  switch (type) {
    case Type::kUint8:
      return H5T_NATIVE_UINT8;
    case Type::kUint32:
      return H5T_NATIVE_UINT32;
    case Type::kUint64:
      return H5T_NATIVE_UINT64;
    case Type::kFloat32:
      return H5T_NATIVE_FLOAT;
    case Type::kFloat64:
      return H5T_NATIVE_DOUBLE;
    case Type::kString:
      break;
  }
  return H5I_INVALID_HID;
}

// One dataset of the file, pointing at the data it holds (nothing is copied).
struct Entry {
  std::string path;                                 // full path, e.g. "/model/layer1.weight"
  Type type = Type::kUint8;                         //
  std::vector<hsize_t> dims;                        // empty: scalar dataspace
  const void* data = nullptr;                       // numeric: the elements
  const std::string* text = nullptr;                // scalar string
  const std::vector<std::string>* texts = nullptr;  // 1-D string array
};

std::uint64_t element_count(const std::vector<hsize_t>& dims) {
  std::uint64_t n = 1;
  for (const hsize_t d : dims) n *= d;
  return n;
}

// The state's per-trainer vectors, split into the three arrays the file stores.
struct ProgressArrays {
  std::vector<std::uint64_t> next_batch_index;
  std::vector<double> offload_ratio;
  std::vector<double> offload_credit;

  explicit ProgressArrays(const std::vector<TrainerProgress>& progress) {
    for (const TrainerProgress& p : progress) {
      next_batch_index.push_back(p.next_batch_index);
      offload_ratio.push_back(p.offload.ratio);
      offload_credit.push_back(p.offload.credit);
    }
  }
};

// Every dataset of a checkpoint of `state`, sorted by path (the checksum order). The pointers
// refer into `state`, `progress`, `names`, `started` and `scheme`, which must outlive the result.
std::vector<Entry> layout(const TrainingState& state, const ProgressArrays& progress,
                          const std::vector<std::string>& names, const std::uint8_t& started,
                          const std::string& scheme) {
  std::vector<Entry> entries;
  const auto scalar = [&](std::string path, Type type, const void* data) {
    entries.push_back({.path = std::move(path), .type = type, .dims = {}, .data = data});
  };
  const auto array = [&](std::string path, Type type, std::size_t n, const void* data) {
    entries.push_back({.path = std::move(path), .type = type, .dims = {n}, .data = data});
  };
  scalar("/position/epoch", Type::kUint32, &state.epoch);
  scalar("/position/step", Type::kUint64, &state.step);
  scalar("/position/global_step", Type::kUint64, &state.global_step);
  scalar("/position/steps_per_epoch", Type::kUint64, &state.steps_per_epoch);
  scalar("/position/global_batch", Type::kUint64, &state.global_batch);
  scalar("/position/dataset_size", Type::kUint64, &state.dataset_size);
  scalar("/position/trainers", Type::kUint32, &state.trainers);
  scalar("/position/workers", Type::kUint32, &state.workers);
  scalar("/rng/seed", Type::kUint64, &state.seed);
  entries.push_back({.path = "/rng/scheme", .type = Type::kString, .dims = {}, .text = &scheme});

  for (const TensorInfo& t : state.tensors) {
    entries.push_back({.path = "/model/" + t.name,
                       .type = Type::kFloat32,
                       .dims = {t.shape.begin(), t.shape.end()},
                       .data = state.params.data() + t.offset});
  }
  entries.push_back({.path = fmt::format("/model/{}", kModelNamesLink),
                     .type = Type::kString,
                     .dims = {names.size()},
                     .texts = &names});

  array("/optimizer/velocity", Type::kFloat32, state.velocity.size(), state.velocity.data());
  scalar("/optimizer/started", Type::kUint8, &started);
  scalar("/optimizer/lr", Type::kFloat64, &state.lr);

  const std::size_t trainers = progress.next_batch_index.size();
  array("/trainers/next_batch_index", Type::kUint64, trainers, progress.next_batch_index.data());
  array("/trainers/offload_ratio", Type::kFloat64, trainers, progress.offload_ratio.data());
  array("/trainers/offload_credit", Type::kFloat64, trainers, progress.offload_credit.data());

  scalar("/accounting/epoch_loss_sum", Type::kFloat64, &state.epoch_loss_sum);
  scalar("/accounting/epoch_correct", Type::kFloat64, &state.epoch_correct);
  scalar("/accounting/epoch_samples", Type::kFloat64, &state.epoch_samples);
  scalar("/accounting/epoch_seconds", Type::kFloat64, &state.epoch_seconds);
  scalar("/accounting/elapsed_seconds", Type::kFloat64, &state.elapsed_seconds);
  array("/accounting/audit_counts", Type::kFloat64, state.audit_counts.size(),
        state.audit_counts.data());

  entries.push_back(
      {.path = "/run/config", .type = Type::kString, .dims = {}, .text = &state.config_toml});
  entries.push_back({.path = "/run/metrics",
                     .type = Type::kString,
                     .dims = {state.metrics.size()},
                     .texts = &state.metrics});
  entries.push_back(
      {.path = "/run/created", .type = Type::kString, .dims = {}, .text = &state.created});

  std::ranges::sort(entries, {}, &Entry::path);
  return entries;
}

// CRC-32C of the datasets in path order. Per dataset: the header
// "<path>\n<type tag>\n[<dims joined by ','>]\n", then the little-endian element bytes, or for
// strings each string's UTF-8 bytes followed by one NUL byte.
std::string checksum(const std::vector<Entry>& entries) {
  std::uint32_t crc = 0;
  const auto feed = [&crc](const void* data, std::size_t size) {
    crc = crc32c(crc, {static_cast<const std::byte*>(data), size});
  };
  const auto feed_string = [&](const std::string& s) { feed(s.data(), s.size() + 1); };
  for (const Entry& e : entries) {
    const std::string header =
        fmt::format("{}\n{}\n[{}]\n", e.path, type_tag(e.type), fmt::join(e.dims, ","));
    feed(header.data(), header.size());
    if (e.text != nullptr) {
      feed_string(*e.text);
    } else if (e.texts != nullptr) {
      for (const std::string& s : *e.texts) feed_string(s);
    } else {
      feed(e.data, element_count(e.dims) * type_size(e.type));
    }
  }
  return fmt::format("crc32c:{:08x}", crc);
}

// The innermost message of HDF5's error stack, reduced to the system error where there is one
// (e.g. "No space left on device"). Call right after the failing call: the next API call
// clears the stack.
std::string hdf5_cause() {
  std::string cause;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* err, void* out) -> herr_t {
        if (n == 0 && err->desc != nullptr) *static_cast<std::string*>(out) = err->desc;
        return 0;
      },
      &cause);
  constexpr std::string_view kMarker = "error message = '";
  if (const auto at = cause.find(kMarker); at != std::string::npos) {
    const auto begin = at + kMarker.size();
    const auto end = cause.find('\'', begin);
    if (end != std::string::npos) return cause.substr(begin, end - begin);
  }
  return cause.empty() ? "unknown HDF5 error" : cause;
}

bool valid_tensor_name(const std::string& name) {
  return !name.empty() && name != "." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos && name != kModelNamesLink;
}

// ---------------------------------------------------------------------------------------------
// Writing

// Closes a file whose writing failed. HDF5 1.10 flushes again on close; when that flush fails
// too (the disk is still full), the file's identifier is left dangling and the library crashes
// when it shuts down at exit. So the file's descriptor is first pointed at an anonymous memory
// file, where the last writes succeed and vanish. (publish_atomically removes the temp file.)
void discard(h5::Handle& file) noexcept {
  if (!file) return;
  void* handle = nullptr;
  if (H5Fget_vfd_handle(file.get(), H5P_DEFAULT, &handle) >= 0 && handle != nullptr) {
    const int fd = *static_cast<int*>(handle);
    const int sink = ::memfd_create("conflux-discarded-checkpoint", MFD_CLOEXEC);
    if (sink >= 0) {
      ::dup2(sink, fd);
      ::close(sink);
    }
  }
  file = h5::Handle();  // closes it; errors are moot
}

class Writer {
 public:
  explicit Writer(const fs::path& path) : name_(path.string()) {}

  // Checks the result of an HDF5 call; RuntimeError naming the file, the call and the cause.
  template <typename T>
  T check(T result, std::string_view what) const {
    if (result < 0) [[unlikely]] {
      CONFLUX_RUNTIME_ERROR("cannot write checkpoint {}: {} failed: {}", name_, what, hdf5_cause());
    }
    return result;
  }
  h5::Handle own(hid_t id, std::string_view what) const {
    check(id, what);
    return h5::Handle(id, "own an HDF5 identifier");
  }

  // Writes the file at `temp`. The numeric datasets go from the state's memory straight to
  // the file (contiguous, no fill values): one copy, into the page cache, as a plain
  // sequential write makes. `sum` is computed meanwhile on another thread and is only needed
  // for the attributes written last.
  void write_file(const fs::path& temp, const std::vector<Entry>& entries,
                  const TrainingState& state, std::future<std::string>& sum) const {
    // Fixed 1.8 object formats: metadata blocks carry checksums (so HDF5 itself notices most
    // damaged metadata) and every HDF5 >= 1.8 reader (h5dump, h5py) can read the file.
    // SEMI close degree: H5Fclose fails rather than silently deferring when a handle is open.
    const h5::Handle fapl = own(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate(file access)");
    check(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18), "H5Pset_libver_bounds");
    check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_SEMI), "H5Pset_fclose_degree");
    const hid_t id = H5Fcreate(temp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
    if (id < 0) {
      CONFLUX_RUNTIME_ERROR("cannot write checkpoint {}: cannot create {}: {}", name_,
                            temp.string(), hdf5_cause());
    }
    h5::Handle file(id, "create the checkpoint file");
    try {
      const h5::Handle lcpl = own(H5Pcreate(H5P_LINK_CREATE), "H5Pcreate(link create)");
      check(H5Pset_create_intermediate_group(lcpl.get(), 1), "H5Pset_create_intermediate_group");
      check(H5Pset_char_encoding(lcpl.get(), H5T_CSET_UTF8), "H5Pset_char_encoding");
      // Contiguous (the default), no compression, and no fill values written before the data.
      const h5::Handle numeric_dcpl = own(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate(dataset)");
      check(H5Pset_fill_time(numeric_dcpl.get(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
      for (const Entry& e : entries) {
        write_dataset(file.get(), e, lcpl.get(),
                      e.type == Type::kString ? H5P_DEFAULT : numeric_dcpl.get());
      }
      write_string_attribute(file.get(), "format", kFormat);
      write_int_attribute(file.get(), "format_version", H5T_STD_I32LE, H5T_NATIVE_INT,
                          &kFormatVersion);
      write_string_attribute(file.get(), "checksum", sum.get());
      write_int_attribute(file.get(), "global_step", H5T_STD_U64LE, H5T_NATIVE_UINT64,
                          &state.global_step);
      write_int_attribute(file.get(), "epoch", H5T_STD_U32LE, H5T_NATIVE_UINT32, &state.epoch);
      write_string_attribute(file.get(), "created", state.created);
      check(H5Fflush(file.get(), H5F_SCOPE_LOCAL), "H5Fflush");
    } catch (...) {
      discard(file);
      throw;
    }
    // Every other handle is closed: a checked close, so that a failed final write is an error.
    check(H5Fclose(file.release()), "H5Fclose");
  }

 private:
  // A fixed-length, NUL-padded UTF-8 string type `width` bytes wide (at least 1).
  h5::Handle fixed_string_type(std::size_t width, std::string_view what) const {
    h5::Handle type = own(H5Tcopy(H5T_C_S1), what);
    check(H5Tset_size(type.get(), std::max<std::size_t>(width, 1)), what);
    check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), what);
    check(H5Tset_cset(type.get(), H5T_CSET_UTF8), what);
    return type;
  }

  // The strings of `e`, each padded with NULs to the longest one's length: the file's bytes.
  static std::pair<std::size_t, std::string> padded_strings(const Entry& e) {
    std::vector<const std::string*> strings;
    if (e.text != nullptr) strings.push_back(e.text);
    if (e.texts != nullptr) {
      for (const std::string& s : *e.texts) strings.push_back(&s);
    }
    std::size_t width = 1;
    for (const std::string* s : strings) width = std::max(width, s->size());
    std::string bytes(width * strings.size(), '\0');
    for (std::size_t i = 0; i < strings.size(); ++i) {
      std::memcpy(bytes.data() + i * width, strings[i]->data(), strings[i]->size());
    }
    return {width, std::move(bytes)};
  }

  void write_dataset(hid_t file, const Entry& e, hid_t lcpl, hid_t dcpl) const {
    const std::string what = fmt::format("writing {}", e.path);
    const h5::Handle space =
        e.dims.empty()
            ? own(H5Screate(H5S_SCALAR), what)
            : own(H5Screate_simple(static_cast<int>(e.dims.size()), e.dims.data(), nullptr), what);
    if (e.type == Type::kString) {
      // Fixed-length strings live in the dataset's own contiguous bytes. (Variable-length
      // strings would go to HDF5's global heap, which has no checksums; damaged heap lengths
      // crash HDF5 1.10 on read.)
      const auto [width, bytes] = padded_strings(e);
      const h5::Handle type = fixed_string_type(width, what);
      const h5::Handle dset = own(
          H5Dcreate2(file, e.path.c_str(), type.get(), space.get(), lcpl, dcpl, H5P_DEFAULT), what);
      if (!bytes.empty()) {
        check(H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()), what);
      }
      return;
    }
    const h5::Handle dset = own(
        H5Dcreate2(file, e.path.c_str(), file_type(e.type), space.get(), lcpl, dcpl, H5P_DEFAULT),
        what);
    if (element_count(e.dims) > 0) {
      check(H5Dwrite(dset.get(), memory_type(e.type), H5S_ALL, H5S_ALL, H5P_DEFAULT, e.data), what);
    }
  }

  // A scalar fixed-length string attribute (kept in the object header, which has a checksum).
  void write_string_attribute(hid_t loc, const char* name, const std::string& value) const {
    const std::string what = fmt::format("writing attribute {}", name);
    const h5::Handle type = fixed_string_type(value.size(), what);
    const h5::Handle space = own(H5Screate(H5S_SCALAR), what);
    const h5::Handle attr =
        own(H5Acreate2(loc, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), what);
    std::string bytes = value;
    bytes.resize(std::max<std::size_t>(value.size(), 1), '\0');
    check(H5Awrite(attr.get(), type.get(), bytes.data()), what);
  }

  void write_int_attribute(hid_t loc, const char* name, hid_t ftype, hid_t mtype,
                           const void* value) const {
    const std::string what = fmt::format("writing attribute {}", name);
    const h5::Handle space = own(H5Screate(H5S_SCALAR), what);
    const h5::Handle attr =
        own(H5Acreate2(loc, name, ftype, space.get(), H5P_DEFAULT, H5P_DEFAULT), what);
    check(H5Awrite(attr.get(), mtype, value), what);
  }

  std::string name_;
};

// Checks that the state describes itself consistently (a caller's bug otherwise).
void check_writable(const fs::path& path, const TrainingState& state) {
  const std::string name = path.string();
  std::uint64_t offset = 0;
  for (const TensorInfo& t : state.tensors) {
    CONFLUX_CHECK(valid_tensor_name(t.name),
                  "cannot write checkpoint {}: '{}' cannot be a tensor name (empty, '/', or "
                  "'{}')",
                  name, t.name, kModelNamesLink);
    CONFLUX_CHECK(t.offset == offset,
                  "cannot write checkpoint {}: tensor {} starts at {}, expected {} (tensors must "
                  "tile the parameters in order)",
                  name, t.name, t.offset, offset);
    std::uint64_t n = 1;
    for (const std::uint64_t d : t.shape) n *= d;
    offset += n;
    CONFLUX_CHECK(offset <= state.params.size(),
                  "cannot write checkpoint {}: tensor {} ends past the {} parameters", name, t.name,
                  state.params.size());
  }
  CONFLUX_CHECK(offset == state.params.size(),
                "cannot write checkpoint {}: the tensors cover {} of {} parameters", name, offset,
                state.params.size());
  CONFLUX_CHECK(state.velocity.size() == state.params.size(),
                "cannot write checkpoint {}: velocity has {} elements but there are {} parameters",
                name, state.velocity.size(), state.params.size());
}

// ---------------------------------------------------------------------------------------------
// Reading

class Reader {
 public:
  Reader(const fs::path& path, std::uint64_t file_size)
      : name_(path.string()), file_size_(file_size) {}

  const std::string& current() const { return current_; }

  // Any failing HDF5 call while reading: CorruptCheckpoint naming the file and the item.
  template <typename T>
  T check(T result, std::string_view what) const {
    if (result < 0) [[unlikely]] {
      CONFLUX_CORRUPT("checkpoint {}: cannot read {} ({} failed: {})", name_, current_, what,
                      hdf5_cause());
    }
    return result;
  }
  h5::Handle own(hid_t id, std::string_view what) const {
    check(id, what);
    return h5::Handle(id, "own an HDF5 identifier");
  }

  TrainingState read(hid_t file) {
    file_ = file;
    check_format();
    TrainingState s;
    read_scalar("/position/epoch", Type::kUint32, &s.epoch);
    read_scalar("/position/step", Type::kUint64, &s.step);
    read_scalar("/position/global_step", Type::kUint64, &s.global_step);
    read_scalar("/position/steps_per_epoch", Type::kUint64, &s.steps_per_epoch);
    read_scalar("/position/global_batch", Type::kUint64, &s.global_batch);
    read_scalar("/position/dataset_size", Type::kUint64, &s.dataset_size);
    read_scalar("/position/trainers", Type::kUint32, &s.trainers);
    read_scalar("/position/workers", Type::kUint32, &s.workers);
    read_scalar("/rng/seed", Type::kUint64, &s.seed);
    const std::string scheme = read_string("/rng/scheme");

    // Model: the tensors in the order of /model/tensor_names, tiling the parameters.
    const std::vector<std::string> names = read_strings(fmt::format("/model/{}", kModelNamesLink));
    struct Pending {
      h5::Handle dset;
      std::string path;
    };
    std::vector<Pending> pending;
    std::uint64_t total = 0;
    for (const std::string& name : names) {
      current_ = "/model/" + name;
      if (!valid_tensor_name(name)) {
        CONFLUX_CORRUPT("checkpoint {}: /model/{} lists the invalid tensor name '{}'", name_,
                        kModelNamesLink, name);
      }
      h5::Handle dset = open(current_);
      const std::vector<hsize_t> dims = shape_of(dset.get(), Type::kFloat32);
      TensorInfo& info = s.tensors.emplace_back();
      info.name = name;
      info.shape.assign(dims.begin(), dims.end());
      info.offset = total;
      total += bounded_count(dims, 4);
      pending.push_back({std::move(dset), current_});
    }
    current_ = "/model";
    {
      const h5::Handle group = own(H5Gopen2(file_, "/model", H5P_DEFAULT), "H5Gopen2");
      H5G_info_t info;
      check(H5Gget_info(group.get(), &info), "H5Gget_info");
      if (info.nlinks != names.size() + 1) {
        CONFLUX_CORRUPT("checkpoint {}: /model holds {} tensors but /model/{} lists {}", name_,
                        info.nlinks - 1, kModelNamesLink, names.size());
      }
    }
    if (total > file_size_ / 4) {
      CONFLUX_CORRUPT("checkpoint {}: the tensors hold {} parameters, more than the file can",
                      name_, total);
    }
    s.params.resize(total);
    std::uint64_t end = 0;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      current_ = pending[i].path;
      const TensorInfo& info = s.tensors[i];
      if (info.offset != end) {
        CONFLUX_CORRUPT("checkpoint {}: tensor {} starts at {}, expected {}", name_, info.name,
                        info.offset, end);
      }
      std::uint64_t n = 1;
      for (const std::uint64_t d : info.shape) n *= d;
      end += n;
      if (n > 0) {
        check(H5Dread(pending[i].dset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                      s.params.data() + info.offset),
              "H5Dread");
      }
    }
    if (end != s.params.size()) {
      CONFLUX_CORRUPT("checkpoint {}: the tensors cover {} of {} parameters", name_, end,
                      s.params.size());
    }

    // Optimiser: the momentum buffer has the parameters' layout.
    s.velocity = read_array<float>("/optimizer/velocity", Type::kFloat32);
    if (s.velocity.size() != s.params.size()) {
      CONFLUX_CORRUPT(
          "checkpoint {}: /optimizer/velocity has {} elements but the model has {} "
          "parameters",
          name_, s.velocity.size(), s.params.size());
    }
    std::uint8_t started = 0;
    read_scalar("/optimizer/started", Type::kUint8, &started);
    if (started > 1) {
      CONFLUX_CORRUPT("checkpoint {}: /optimizer/started is {}, not 0 or 1", name_, started);
    }
    s.optimizer_started = started != 0;
    read_scalar("/optimizer/lr", Type::kFloat64, &s.lr);

    // Per-trainer progress: three arrays of one length.
    const auto next = read_array<std::uint64_t>("/trainers/next_batch_index", Type::kUint64);
    const auto ratio = read_array<double>("/trainers/offload_ratio", Type::kFloat64);
    const auto credit = read_array<double>("/trainers/offload_credit", Type::kFloat64);
    if (ratio.size() != next.size() || credit.size() != next.size()) {
      CONFLUX_CORRUPT(
          "checkpoint {}: the /trainers arrays differ in length (next_batch_index {}, "
          "offload_ratio {}, offload_credit {})",
          name_, next.size(), ratio.size(), credit.size());
    }
    for (std::size_t t = 0; t < next.size(); ++t) {
      s.progress.push_back(
          {.next_batch_index = next[t], .offload = {.ratio = ratio[t], .credit = credit[t]}});
    }

    read_scalar("/accounting/epoch_loss_sum", Type::kFloat64, &s.epoch_loss_sum);
    read_scalar("/accounting/epoch_correct", Type::kFloat64, &s.epoch_correct);
    read_scalar("/accounting/epoch_samples", Type::kFloat64, &s.epoch_samples);
    read_scalar("/accounting/epoch_seconds", Type::kFloat64, &s.epoch_seconds);
    read_scalar("/accounting/elapsed_seconds", Type::kFloat64, &s.elapsed_seconds);
    s.audit_counts = read_array<double>("/accounting/audit_counts", Type::kFloat64);

    s.config_toml = read_string("/run/config");
    s.metrics = read_strings("/run/metrics");
    s.created = read_string("/run/created");

    // The checksum, recomputed over what was read (every dataset of the layout).
    current_ = "the checksum";
    const ProgressArrays arrays(s.progress);
    const std::uint8_t started_byte = s.optimizer_started ? 1 : 0;
    const std::string computed = checksum(layout(s, arrays, names, started_byte, scheme));
    if (computed != stored_checksum_) {
      CONFLUX_CORRUPT("checkpoint {}: checksum mismatch: stored {}, computed {}", name_,
                      stored_checksum_, computed);
    }
    return s;
  }

 private:
  void check_format() {
    current_ = "the format attribute";
    if (check(H5Aexists(file_, "format"), "H5Aexists") == 0) {
      CONFLUX_CORRUPT("checkpoint {}: not a conflux checkpoint (no 'format' attribute)", name_);
    }
    const std::string format = h5::read_string_attribute(file_, "format");
    if (format != kFormat) {
      CONFLUX_CORRUPT("checkpoint {}: not a conflux checkpoint (format is '{}', expected '{}')",
                      name_, format, kFormat);
    }
    current_ = "the format_version attribute";
    if (check(H5Aexists(file_, "format_version"), "H5Aexists") == 0) {
      CONFLUX_CORRUPT("checkpoint {}: no 'format_version' attribute", name_);
    }
    {
      const h5::Handle attr = own(H5Aopen(file_, "format_version", H5P_DEFAULT), "H5Aopen");
      const h5::Handle type = own(H5Aget_type(attr.get()), "H5Aget_type");
      const h5::Handle space = own(H5Aget_space(attr.get()), "H5Aget_space");
      if (check(H5Tget_class(type.get()), "H5Tget_class") != H5T_INTEGER ||
          check(H5Sget_simple_extent_npoints(space.get()), "H5Sget_simple_extent_npoints") != 1) {
        CONFLUX_CORRUPT("checkpoint {}: format_version is not an integer", name_);
      }
      long long version = 0;
      check(H5Aread(attr.get(), H5T_NATIVE_LLONG, &version), "H5Aread");
      if (version != kFormatVersion) {
        CONFLUX_CORRUPT(
            "checkpoint {}: format_version {} is not supported (this conflux reads "
            "version {})",
            name_, version, kFormatVersion);
      }
    }
    current_ = "the checksum attribute";
    if (check(H5Aexists(file_, "checksum"), "H5Aexists") == 0) {
      CONFLUX_CORRUPT("checkpoint {}: no 'checksum' attribute", name_);
    }
    stored_checksum_ = h5::read_string_attribute(file_, "checksum");
  }

  h5::Handle open(const std::string& path) {
    current_ = path;
    const hid_t id = H5Dopen2(file_, path.c_str(), H5P_DEFAULT);
    if (id < 0) {
      CONFLUX_CORRUPT("checkpoint {}: dataset {} is missing or unreadable ({})", name_, path,
                      hdf5_cause());
    }
    return h5::Handle(id, "open a checkpoint dataset");
  }

  // The dataset's dimensions (empty: scalar), after checking that it has type `expected`.
  std::vector<hsize_t> shape_of(hid_t dset, Type expected) const {
    const h5::Handle type = own(H5Dget_type(dset), "H5Dget_type");
    const H5T_class_t cls = check(H5Tget_class(type.get()), "H5Tget_class");
    bool ok = false;
    if (expected == Type::kString) {
      ok = cls == H5T_STRING && check(H5Tis_variable_str(type.get()), "H5Tis_variable_str") == 0;
    } else if (expected == Type::kFloat32 || expected == Type::kFloat64) {
      ok = cls == H5T_FLOAT && H5Tget_size(type.get()) == type_size(expected);
    } else {
      ok = cls == H5T_INTEGER && H5Tget_size(type.get()) == type_size(expected) &&
           H5Tget_sign(type.get()) == H5T_SGN_NONE;
    }
    if (!ok) {
      CONFLUX_CORRUPT("checkpoint {}: {} is not of type {}", name_, current_, type_tag(expected));
    }
    const h5::Handle space = own(H5Dget_space(dset), "H5Dget_space");
    const int rank = check(H5Sget_simple_extent_ndims(space.get()), "H5Sget_simple_extent_ndims");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    if (rank > 0) {
      check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr),
            "H5Sget_simple_extent_dims");
    }
    return dims;
  }

  // Element count of `dims`, refusing counts that could not fit in the file (so that a damaged
  // header cannot make us allocate without bound).
  std::uint64_t bounded_count(const std::vector<hsize_t>& dims, std::uint64_t bytes_each) const {
    std::uint64_t n = 1;
    for (const hsize_t d : dims) {
      if (d != 0 && n > file_size_ / d) {
        CONFLUX_CORRUPT("checkpoint {}: {} has shape [{}], larger than the file", name_, current_,
                        fmt::join(dims, ","));
      }
      n *= d;
    }
    if (n > file_size_ / bytes_each) {
      CONFLUX_CORRUPT("checkpoint {}: {} has shape [{}], larger than the file", name_, current_,
                      fmt::join(dims, ","));
    }
    return n;
  }

  void require_rank(const std::vector<hsize_t>& dims, std::size_t rank) const {
    if (dims.size() != rank) {
      CONFLUX_CORRUPT("checkpoint {}: {} has shape [{}], expected {}", name_, current_,
                      fmt::join(dims, ","), rank == 0 ? "a scalar" : "a 1-D array");
    }
  }

  void read_scalar(const std::string& path, Type type, void* out) {
    const h5::Handle dset = open(path);
    require_rank(shape_of(dset.get(), type), 0);
    check(H5Dread(dset.get(), memory_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, out), "H5Dread");
  }

  template <typename T>
  std::vector<T> read_array(const std::string& path, Type type) {
    const h5::Handle dset = open(path);
    const std::vector<hsize_t> dims = shape_of(dset.get(), type);
    require_rank(dims, 1);
    std::vector<T> values(bounded_count(dims, sizeof(T)));
    if (!values.empty()) {
      check(H5Dread(dset.get(), memory_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
            "H5Dread");
    }
    return values;
  }

  // Reads fixed-length strings (scalar: rank 0, array: rank 1); each ends at its first NUL.
  std::vector<std::string> read_texts(const std::string& path, std::size_t rank) {
    const h5::Handle dset = open(path);
    const std::vector<hsize_t> dims = shape_of(dset.get(), Type::kString);
    require_rank(dims, rank);
    const h5::Handle type = own(H5Dget_type(dset.get()), "H5Dget_type");
    const std::size_t width = H5Tget_size(type.get());
    if (width == 0) CONFLUX_CORRUPT("checkpoint {}: {} has zero-width strings", name_, current_);
    const std::uint64_t count = bounded_count(dims, width);
    std::vector<std::string> values;
    if (count == 0) return values;
    std::string bytes(count * width, '\0');
    check(H5Dread(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()), "H5Dread");
    values.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::string_view cell(bytes.data() + i * width, width);
      values.emplace_back(cell.substr(0, cell.find('\0')));
    }
    return values;
  }
  std::string read_string(const std::string& path) { return read_texts(path, 0).front(); }
  std::vector<std::string> read_strings(const std::string& path) { return read_texts(path, 1); }

  std::string name_;
  std::uint64_t file_size_;
  hid_t file_ = H5I_INVALID_HID;
  std::string current_ = "the file";
  std::string stored_checksum_;
};

std::string yes_no(bool b) {
  return b ? "yes" : "no";
}

}  // namespace

WriteStats write_checkpoint(const fs::path& path, const TrainingState& state) {
  const auto start = std::chrono::steady_clock::now();
  const auto hdf5_lock = h5::lock_library();
  h5::silence_error_stack();
  check_writable(path, state);
  const ProgressArrays progress(state.progress);
  std::vector<std::string> names;
  names.reserve(state.tensors.size());
  for (const TensorInfo& t : state.tensors) names.push_back(t.name);
  const std::uint8_t started = state.optimizer_started ? 1 : 0;
  const std::string scheme = kRngScheme;
  const std::vector<Entry> entries = layout(state, progress, names, started, scheme);
  // The checksum is computed beside the write: both only read `entries`.
  std::future<std::string> sum = std::async(std::launch::async, [&] { return checksum(entries); });

  const Writer writer(path);
  try {
    publish_atomically(path, [&](const fs::path& temp) {
      writer.write_file(temp, entries, state, sum);
    });  // every HDF5 handle is closed when the writer returns, before the fsync and rename
  } catch (const RuntimeError& e) {
    const std::string own_prefix = "cannot write checkpoint " + path.string();
    if (std::string_view(e.what()).find(own_prefix) != std::string_view::npos) throw;
    CONFLUX_RUNTIME_ERROR("cannot write checkpoint {}: {}", path.string(), e.what());
  } catch (const std::exception& e) {  // an InputError or bad_alloc is still a failed write
    CONFLUX_RUNTIME_ERROR("cannot write checkpoint {}: {}", path.string(), e.what());
  }
  std::error_code ec;
  const std::uintmax_t bytes = fs::file_size(path, ec);
  CONFLUX_CHECK(!ec, "cannot stat the checkpoint {} just written: {}", path.string(), ec.message());
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  return {.bytes = bytes, .seconds = seconds.count()};
}

TrainingState read_checkpoint(const fs::path& path) {
  const auto hdf5_lock = h5::lock_library();
  h5::silence_error_stack();
  const std::string name = path.string();
  std::error_code ec;
  if (!fs::exists(path, ec)) CONFLUX_CORRUPT("checkpoint {}: no such file", name);
  if (!fs::is_regular_file(path, ec)) CONFLUX_CORRUPT("checkpoint {}: not a regular file", name);
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) CONFLUX_CORRUPT("checkpoint {}: cannot read it: {}", name, ec.message());
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    CONFLUX_CORRUPT("checkpoint {}: truncated or not an HDF5 file", name);
  }
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) {
    CONFLUX_CORRUPT("checkpoint {}: truncated or not an HDF5 file ({})", name, hdf5_cause());
  }
  Reader reader(path, size);
  try {
    const h5::Handle file(id, "open the checkpoint");
    return reader.read(file.get());
  } catch (const CorruptCheckpoint&) {
    throw;
  } catch (const std::exception& e) {  // RuntimeError from a helper, bad_alloc, ...
    CONFLUX_CORRUPT("checkpoint {}: cannot read {}: {}", name, reader.current(), e.what());
  }
}

std::string describe_checkpoint(const fs::path& path) {
  const TrainingState s = read_checkpoint(path);
  const ProgressArrays progress(s.progress);
  std::vector<std::string> names;
  for (const TensorInfo& t : s.tensors) names.push_back(t.name);
  const std::uint8_t started = s.optimizer_started ? 1 : 0;
  const std::string scheme = kRngScheme;
  // read_checkpoint verified the stored checksum against exactly this recomputation.
  const std::string sum = checksum(layout(s, progress, names, started, scheme));
  std::error_code ec;
  const std::uintmax_t bytes = fs::file_size(path, ec);

  std::string out;
  auto line = [&out](std::string_view key, const std::string& value) {
    out += fmt::format("  {:<18} {}\n", key, value);
  };
  out += fmt::format("checkpoint {}\n", path.string());
  line("format", fmt::format("{} version {}", kFormat, kFormatVersion));
  line("checksum", fmt::format("{} (verified)", sum));
  line("created", s.created.empty() ? "-" : s.created);
  line("size", fmt::format("{} bytes", ec ? 0 : bytes));

  out += "position\n";
  line("epoch", fmt::format("{}", s.epoch));
  line("step", fmt::format("{} / {} steps per epoch", s.step, s.steps_per_epoch));
  line("global step", fmt::format("{}", s.global_step));
  line("global batch", fmt::format("{} samples of {}", s.global_batch, s.dataset_size));
  line("seed", fmt::format("{}", s.seed));
  line("ranks", fmt::format("{} trainers, {} workers", s.trainers, s.workers));

  out += fmt::format("model: {} tensors, {} parameters\n", s.tensors.size(), s.params.size());
  for (const TensorInfo& t : s.tensors) line(t.name, fmt::format("[{}]", fmt::join(t.shape, ", ")));

  out += "optimizer\n";
  line("momentum started", yes_no(s.optimizer_started));
  line("learning rate", fmt::format("{}", s.lr));

  out += fmt::format("trainers: {}\n", s.progress.size());
  for (std::size_t t = 0; t < s.progress.size(); ++t) {
    line(fmt::format("trainer {}", t),
         fmt::format("next batch index {}, offload ratio {}, offload credit {}",
                     s.progress[t].next_batch_index, s.progress[t].offload.ratio,
                     s.progress[t].offload.credit));
  }

  out += "epoch accounting\n";
  line("loss sum", fmt::format("{}", s.epoch_loss_sum));
  line("correct", fmt::format("{}", s.epoch_correct));
  line("samples", fmt::format("{}", s.epoch_samples));
  line("epoch seconds", fmt::format("{:.3f}", s.epoch_seconds));
  line("elapsed seconds", fmt::format("{:.3f}", s.elapsed_seconds));
  line("audit", s.audit_counts.empty()
                    ? std::string("off")
                    : fmt::format("on ({} sample counts)", s.audit_counts.size()));

  out += fmt::format("metrics: {} lines\n", s.metrics.size());
  if (!s.metrics.empty()) line("last", s.metrics.back());

  out += "config\n";
  std::string_view config = s.config_toml;
  while (!config.empty()) {
    const auto eol = config.find('\n');
    const std::string_view row = config.substr(0, eol);
    out += row.empty() ? "\n" : fmt::format("    {}\n", row);
    if (eol == std::string_view::npos) break;
    config.remove_prefix(eol + 1);
  }
  return out;
}

}  // namespace conflux::ckpt
