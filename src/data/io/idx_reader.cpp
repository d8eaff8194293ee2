#include "conflux/data/io/idx_reader.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>

#include "conflux/core/error.hpp"
#include "conflux/data/io/file_stream.hpp"

namespace conflux::data {
namespace {

constexpr std::uint32_t kImagesMagic = 0x00000803;
constexpr std::uint32_t kLabelsMagic = 0x00000801;
// An IDX magic is 0x0000TTDD: type code TT (0x08 = unsigned byte) and dimension count DD.
constexpr std::uint32_t kUnsignedByteMagicPrefix = 0x00000800;
// Bigger images are certainly a corrupt header; the bound also keeps N * H * W in 64 bits.
constexpr std::uint32_t kMaxImageSide = 1 << 15;

std::uint32_t load_be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

/// What one IDX file is expected to hold.
struct IdxKind {
  const char* description;  // "IDX images"
  std::uint32_t magic;
  int dims;
};
constexpr IdxKind kImages{"IDX images", kImagesMagic, 3};
constexpr IdxKind kLabels{"IDX labels", kLabelsMagic, 1};

/// Reads and checks magic number and dimensions; returns the dimensions.
std::array<std::uint32_t, 3> read_header(FileStream& in, const IdxKind& kind) {
  const std::string file = in.path().string();
  std::array<std::uint8_t, 4> magic_bytes{};
  if (const auto got = in.read(std::as_writable_bytes(std::span(magic_bytes))); got < 4) {
    CONFLUX_INPUT_ERROR("{}: truncated at {}: expected the 4-byte magic number of {}", file,
                        in.where(got), kind.description);
  }
  const std::uint32_t magic = load_be32(magic_bytes.data());
  if (magic != kind.magic) {
    std::string why;
    if ((magic & 0xffffff00u) == kUnsignedByteMagicPrefix) {
      why = fmt::format("; it declares {} dimensions instead of {}", magic & 0xffu, kind.dims);
    }
    CONFLUX_INPUT_ERROR("{}: bad magic number 0x{:08x} at {} (expected 0x{:08x}, {}){}", file,
                        magic, in.where(0), kind.magic, kind.description, why);
  }
  std::array<std::uint8_t, 12> dim_bytes{};
  const std::size_t dim_size = 4 * static_cast<std::size_t>(kind.dims);
  if (const auto got = in.read(std::as_writable_bytes(std::span(dim_bytes.data(), dim_size)));
      got < dim_size) {
    CONFLUX_INPUT_ERROR("{}: truncated at {}: expected a {}-byte {} header", file,
                        in.where(4 + got), 4 + dim_size, kind.description);
  }
  std::array<std::uint32_t, 3> dims{};
  for (int i = 0; i < kind.dims; ++i) dims[i] = load_be32(dim_bytes.data() + 4 * i);
  return dims;
}

// Largest step by which the payload buffer of a gzip file grows: memory follows what the
// stream turns out to hold, never what its header claims.
constexpr std::size_t kGrowStep = std::size_t{64} << 20;

/// What an IDX payload holds, for reading and for messages.
struct Payload {
  std::uint64_t records = 0;       // count the header claims
  std::uint64_t record_bytes = 1;  // bytes of one record
  std::string what;                // "pixels (3 images of 28x28)"
  const char* noun = "";           // "images"
  std::uint64_t bytes() const { return records * record_bytes; }
};

[[noreturn]] void too_short(const FileStream& in, const Payload& p, std::uint64_t header,
                            std::uint64_t holds) {
  CONFLUX_INPUT_ERROR(
      "{}: truncated at {}: expected {} bytes of {} after the {}-byte header, but the file holds "
      "{}: room for {} of the {} {} its header claims (a truncated file, or a corrupt record "
      "count at byte offset 4)",
      in.path().string(), in.where(header + holds), p.bytes(), p.what, header, holds,
      holds / p.record_bytes, p.records, p.noun);
}

/// Reads exactly the payload's bytes into `out`; InputError on truncation or trailing bytes.
/// A plain file's size bounds the payload before anything is allocated; a gzip file's buffer
/// grows in steps as data arrives, so a corrupt count costs no more memory than the file holds.
void read_payload(FileStream& in, std::vector<std::uint8_t>& out, const Payload& p) {
  const std::uint64_t header = in.offset();
  const std::uint64_t expected = p.bytes();
  if (!in.gzip() && in.file_size() < header + expected) {
    too_short(in, p, header, std::max<std::uint64_t>(in.file_size(), header) - header);
  }
  std::uint64_t got = 0;
  while (got < expected) {
    const std::uint64_t grow =
        in.gzip() ? std::min<std::uint64_t>(expected - got, kGrowStep) : expected - got;
    out.resize(static_cast<std::size_t>(got + grow));
    const std::size_t n = in.read(std::as_writable_bytes(std::span(out).subspan(got)));
    got += n;
    if (n < grow) too_short(in, p, header, got);
  }
  if (const std::uint64_t extra = in.skip_to_end(); extra > 0) {
    CONFLUX_INPUT_ERROR("{}: {} trailing bytes at {}: the header declares {} bytes of {}",
                        in.path().string(), extra, in.where(header + expected), expected, p.what);
  }
}

}  // namespace

InMemorySplit read_idx_split(const std::filesystem::path& images_file,
                             const std::filesystem::path& labels_file, std::string dataset_name,
                             std::vector<std::string> class_names) {
  CONFLUX_REQUIRE(!class_names.empty() && class_names.size() <= 256,
                  "dataset {}: {} class names given; IDX labels are bytes, so 1..256 classes",
                  dataset_name, class_names.size());
  FileStream images_in(images_file);
  const auto image_dims = read_header(images_in, kImages);
  const auto [count, height, width] = image_dims;
  for (const auto& [side, name, offset] :
       {std::tuple{height, "height", 8}, std::tuple{width, "width", 12}}) {
    if (side == 0 || side > kMaxImageSide) {
      CONFLUX_INPUT_ERROR("{}: image {} {} at {} is out of range [1, {}]", images_file.string(),
                          name, side, images_in.where(offset), kMaxImageSide);
    }
  }

  FileStream labels_in(labels_file);
  const std::uint32_t label_count = read_header(labels_in, kLabels)[0];
  if (label_count != count) {
    CONFLUX_INPUT_ERROR(
        "image file {} has {} records but label file {} has {} (counts at byte offset 4)",
        images_file.string(), count, labels_file.string(), label_count);
  }

  InMemorySplit ds;
  ds.name = std::move(dataset_name);
  ds.shape = {1, static_cast<int>(height), static_cast<int>(width)};
  ds.num_classes = static_cast<int>(class_names.size());
  ds.class_names = std::move(class_names);

  read_payload(images_in, ds.images,
               {count, std::uint64_t{height} * width,
                fmt::format("pixels ({} images of {}x{})", count, height, width), "images"});
  std::vector<std::uint8_t> label_bytes;
  read_payload(labels_in, label_bytes,
               {count, 1, fmt::format("labels ({} records)", count), "labels"});
  ds.labels.assign(label_bytes.begin(), label_bytes.end());

  const model::Label max_label = ds.num_classes - 1;
  const auto bad = std::find_if(ds.labels.begin(), ds.labels.end(),
                                [&](model::Label label) { return label > max_label; });
  if (bad != ds.labels.end()) {
    CONFLUX_INPUT_ERROR("{}: label {} at {} out of range [0, {})", labels_file.string(), *bad,
                        labels_in.where(8 + static_cast<std::uint64_t>(bad - ds.labels.begin())),
                        ds.num_classes);
  }

  ds.sources = {{images_file.filename().string(), images_in.finish_sha256_hex()},
                {labels_file.filename().string(), labels_in.finish_sha256_hex()}};
  return ds;
}

}  // namespace conflux::data
