// conflux-bench make-images: an ImageNet-style folder of JPEG and PNG files made from the real
// CIFAR-10 images, as a stand-in for ImageNet in tests and decode benchmarks: upscaled to the
// sizes of --size (10 CIFAR-10 classes), or with --like imagenet given photographs' sizes,
// texture and JPEG statistics (imagenet_like.hpp) in 1000 classes. Deterministic: the same
// options give the same bytes.

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "../testkit/image_encode.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/data/io/cifar_reader.hpp"
#include "image_arrays.hpp"
#include "image_pixels.hpp"
#include "imagenet_like.hpp"
#include "report.hpp"
#include "scenarios.hpp"

namespace conflux::bench {

namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

constexpr std::size_t kCifarPerFile = 10000;
constexpr int kJpegQuality = 90;
constexpr std::size_t kMaxImagenetLike = 9999999;  // the file names' seven digits
constexpr std::size_t kMaxClasses = 10000;         // class0000 ... class9999

struct MakeImagesArgs {
  std::string data_dir = environment_data_dir();  // as conflux: $CONFLUX_DATA, else per-user
  std::string out;
  std::size_t train = 1000;
  std::size_t val = 200;
  std::string size = "0";
  std::uint64_t seed = 1;
  std::size_t png_every = 0;
  std::size_t gray_every = 0;
  std::size_t cmyk_every = 0;
  std::string like;          // "" (CIFAR-10 at --size) or "imagenet"
  std::size_t classes = 10;  // --classes with --like imagenet, else CIFAR-10's 10
  bool damaged = false;
  std::string hdf5_arrays;  // --hdf5-arrays FILE: also the decoded pixels as HDF5 arrays
  int min_side = 0;         // from --size; 0 = keep 32x32
  int max_side = 0;
};

void parse_size(MakeImagesArgs& a) {
  if (a.size == "0") return;
  const auto dash = a.size.find('-');
  bool ok = dash != std::string::npos;
  try {
    if (ok) {
      a.min_side = std::stoi(a.size.substr(0, dash));
      a.max_side = std::stoi(a.size.substr(dash + 1));
    }
  } catch (const std::exception&) {
    ok = false;
  }
  CONFLUX_REQUIRE(ok, "make-images: --size '{}' is not MIN-MAX (e.g. 200-500) or 0", a.size);
  CONFLUX_REQUIRE(a.min_side >= 1 && a.min_side <= a.max_side && a.max_side <= 4096,
                  "make-images: --size {}: need 1 <= MIN <= MAX <= 4096", a.size);
}

void check_cifar_args(MakeImagesArgs& a, const po::variables_map& vm) {
  CONFLUX_REQUIRE(a.train <= 5 * kCifarPerFile, "make-images: --train {} > 50000", a.train);
  CONFLUX_REQUIRE(a.val <= kCifarPerFile, "make-images: --val {} > 10000", a.val);
  CONFLUX_REQUIRE(a.hdf5_arrays.empty() || (a.min_side == 0 && !a.damaged),
                  "make-images: --hdf5-arrays needs --size 0 (fixed 32x32 images) and no "
                  "--damaged");
  CONFLUX_REQUIRE(vm["classes"].defaulted(),
                  "make-images: --classes needs --like imagenet (CIFAR-10 images keep their "
                  "10 classes)");
  a.classes = 10;
}

void check_imagenet_args(MakeImagesArgs& a, const po::variables_map& vm) {
  CONFLUX_REQUIRE(a.like == "imagenet",
                  "make-images: --like '{}': the only kind is 'imagenet' (leave --like out for "
                  "CIFAR-10 images at --size)",
                  a.like);
  CONFLUX_REQUIRE(a.min_side == 0,
                  "make-images: --size {} with --like imagenet: the sizes are drawn as "
                  "ImageNet's; leave --size out",
                  a.size);
  CONFLUX_REQUIRE(a.hdf5_arrays.empty(),
                  "make-images: --hdf5-arrays needs 32x32 CIFAR-10 images, not --like imagenet");
  CONFLUX_REQUIRE(a.classes >= 1 && a.classes <= kMaxClasses,
                  "make-images: --classes {}: need 1 to {}", a.classes, kMaxClasses);
  for (const auto& [option, n] : {std::pair{"train", a.train}, std::pair{"val", a.val}}) {
    CONFLUX_REQUIRE(n == 0 || (n >= a.classes && n <= kMaxImagenetLike),
                    "make-images: --{} {} with --classes {}: need 0 or {} to {} images "
                    "(conflux refuses a class folder without images)",
                    option, n, a.classes, a.classes, kMaxImagenetLike);
  }
  // ImageNet's own rates would leave a small set without any gray, CMYK or PNG file, so
  // these are higher than its 22 CMYK and 1 PNG in 1.28 M (docs/datasets.md).
  if (vm["gray-every"].defaulted()) a.gray_every = 50;
  if (vm["cmyk-every"].defaulted()) a.cmyk_every = 333;
  if (vm["png-every"].defaulted()) a.png_every = 499;
}

// Image i of a CIFAR-10 split (CHW planes) as interleaved RGB.
RawImage cifar_image(const data::InMemorySplit& split, std::size_t i) {
  const auto chw = split.image(i);
  const int side = split.shape.width;
  const std::size_t plane = static_cast<std::size_t>(side) * side;
  RawImage image{side, side, PixelKind::kRgb, std::vector<std::uint8_t>(3 * plane)};
  for (std::size_t p = 0; p < plane; ++p) {
    for (std::size_t c = 0; c < 3; ++c) image.pixels[3 * p + c] = chw[c * plane + p];
  }
  return image;
}

std::optional<po::variables_map> parse(const std::vector<std::string>& args, MakeImagesArgs& a,
                                       CommonOptions& common, const comm::Communicator& world) {
  po::options_description options(
      "conflux-bench make-images options (CIFAR-10 images upscaled to ImageNet-like sizes, or "
      "with --like imagenet given photographs' sizes and JPEG statistics, written as an "
      "ImageNet-style folder <out>/{train,val}/<class>/<file>.jpg|JPEG|png)");
  options.add_options()("help,h", "show this help")(
      "data-dir", po::value(&a.data_dir)->default_value(a.data_dir),
      "directory holding cifar-10/ (data_batch_*.bin, test_batch.bin); --data works too")(
      "out", po::value(&a.out)->required(), "new or empty directory to write into")(
      "train", po::value(&a.train)->default_value(a.train),
      "train images (from data_batch_1.bin on, at most 50000; with --like imagenet at most "
      "9999999, the CIFAR-10 images reused in turn)")(
      "val", po::value(&a.val)->default_value(a.val),
      "val images (from test_batch.bin, at most 10000; with --like imagenet as --train)")(
      "like", po::value(&a.like),
      "imagenet: draw each image's size, aspect ratio, chroma subsampling and texture as "
      "ImageNet's photographs have them (docs/datasets.md), in --classes class folders "
      "class0000, ...; leave out for CIFAR-10 images at --size in their 10 classes")(
      "classes", po::value(&a.classes)->default_value(1000),
      "with --like imagenet: class folders; image i of N goes to class i * classes / N, so "
      "--train and --val must each be 0 or at least this")(
      "size", po::value(&a.size)->default_value(a.size),
      "MIN-MAX: upscale each image (bilinear) to a width and a height drawn in [MIN, MAX] "
      "from --seed and its index, so aspect ratios vary; 0 keeps 32x32")(
      "seed", po::value(&a.seed)->default_value(a.seed), "seed of the drawn sizes")(
      "png-every", po::value(&a.png_every)->default_value(a.png_every),
      "write every K-th image as PNG, every other one of those RGBA (0: none; with --like "
      "imagenet 499 unless given)")(
      "gray-every", po::value(&a.gray_every)->default_value(a.gray_every),
      "write every K-th image as a grayscale JPEG, unless it is a PNG (0: none; with --like "
      "imagenet 50 unless given)")(
      "cmyk-every", po::value(&a.cmyk_every)->default_value(a.cmyk_every),
      "write every K-th image as a CMYK (Adobe) JPEG, unless it is a PNG or gray (0: none; "
      "with --like imagenet 333 unless given)")(
      "damaged", po::bool_switch(&a.damaged),
      "also write a truncated JPEG, a text file and a zero-byte file named .jpg into train/")(
      "hdf5-arrays", po::value(&a.hdf5_arrays),
      "FILE: also write the images as HDF5 arrays (data.dataset = \"hdf5-arrays\"): "
      "/train/images, /test/images uint8 [N, 32, 32, 3] (hwc) holding the pixels conflux "
      "decodes from the written files, /train/labels, /test/labels int64 [N], in the folder's "
      "sample order; only with --size 0, not with --damaged");
  auto vm = parse_scenario_options("make-images", args, options, common, world);
  if (!vm) return vm;
  parse_size(a);
  if (a.like.empty()) {
    check_cifar_args(a, *vm);
  } else {
    check_imagenet_args(a, *vm);
  }
  return vm;
}

// Image i of a split: its RGB pixels and the chroma subsampling a colour JPEG of it gets.
std::pair<RawImage, Chroma> draw_image(const MakeImagesArgs& a, const data::InMemorySplit& split,
                                       std::uint64_t split_id, std::size_t i) {
  if (!a.like.empty()) {
    const ImagenetLikeDraw d = draw_imagenet_like(a.seed, split_id, i);
    return {imagenet_like_pixels(cifar_image(split, i % split.size()), d, a.seed, split_id, i),
            d.chroma};
  }
  RawImage image = cifar_image(split, i);
  if (a.min_side > 0) {
    Rng rng{a.seed, split_id, i};
    const auto span = static_cast<std::uint64_t>(a.max_side - a.min_side + 1);
    const int width = a.min_side + static_cast<int>(rng.below(span));
    const int height = a.min_side + static_cast<int>(rng.below(span));
    image = resize_bilinear(image, width, height);
  }
  return {std::move(image), Chroma::k420};
}

enum class FileKind { kJpegRgb, kJpegGray, kJpegCmyk, kPngRgb, kPngRgba };

// Where the --*-every periods meet, PNG comes before gray, gray before CMYK.
FileKind file_kind(const MakeImagesArgs& a, std::size_t i) {
  auto every = [i](std::size_t k) { return k > 0 && i % k == k - 1; };
  if (every(a.png_every)) {
    return (i / a.png_every) % 2 == 1 ? FileKind::kPngRgba : FileKind::kPngRgb;
  }
  if (every(a.gray_every)) return FileKind::kJpegGray;
  if (every(a.cmyk_every)) return FileKind::kJpegCmyk;
  return FileKind::kJpegRgb;
}

std::vector<std::uint8_t> encode_as(const RawImage& rgb, FileKind kind, Chroma chroma) {
  switch (kind) {
    case FileKind::kJpegGray:
      return encode_jpeg(to_gray(rgb), kJpegQuality);
    case FileKind::kJpegCmyk:
      return encode_jpeg(to_inverted_cmyk(rgb), kJpegQuality, chroma);
    case FileKind::kPngRgb:
      return encode_png(rgb);
    case FileKind::kPngRgba:
      return encode_png(with_alpha(rgb));
    case FileKind::kJpegRgb:
      break;
  }
  return encode_jpeg(rgb, kJpegQuality, chroma);
}

void write_file(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  CONFLUX_CHECK(out.good(), "make-images: cannot write {}", path.string());
}

// What one split's files are, for the report.
struct SplitCounts {
  std::array<std::size_t, 5> files{};  // by FileKind
  std::size_t bytes = 0, pixels = 0, sum_width = 0, sum_height = 0;
  int min_width = 1 << 30, max_width = 0, min_height = 1 << 30, max_height = 0;
};

// The class folders: CIFAR-10's, or class0000... for --like imagenet.
std::vector<std::string> class_names(const MakeImagesArgs& a) {
  if (a.like.empty()) return data::cifar10_class_names();
  std::vector<std::string> names;
  for (std::size_t k = 0; k < a.classes; ++k) names.push_back(imagenet_like_class_name(k));
  return names;
}

// Image i of `count` in a split: its class and its path under the split folder `dir`.
fs::path image_path(const MakeImagesArgs& a, const data::InMemorySplit& split,
                    const std::vector<std::string>& names, const fs::path& dir, std::size_t i,
                    std::size_t count, bool png) {
  if (a.like.empty()) {
    const auto& name = names.at(static_cast<std::size_t>(split.labels[i]));
    return dir / name / fmt::format("{:06d}.{}", i, png ? "png" : "jpg");
  }
  // Consecutive blocks, as ImageNet lists its classes, so every --*-every kind meets many.
  const std::string& name = names.at(i * a.classes / count);
  return dir / name / fmt::format("{}_{:07d}.{}", name, i, png ? "png" : "JPEG");
}

// Writes image i of `split` (stream id `split_id`, `count` images) and counts it.
void write_image(const MakeImagesArgs& a, const data::InMemorySplit& split,
                 const std::vector<std::string>& names, const fs::path& dir, std::uint64_t split_id,
                 std::size_t i, std::size_t count, SplitCounts& counts) {
  const auto [image, chroma] = draw_image(a, split, split_id, i);
  const FileKind kind = file_kind(a, i);
  const bool png = kind == FileKind::kPngRgb || kind == FileKind::kPngRgba;
  const std::vector<std::uint8_t> bytes = encode_as(image, kind, chroma);
  write_file(image_path(a, split, names, dir, i, count, png), bytes);
  ++counts.files[static_cast<std::size_t>(kind)];
  counts.bytes += bytes.size();
  counts.pixels += static_cast<std::size_t>(image.width) * image.height;
  counts.sum_width += static_cast<std::size_t>(image.width);
  counts.sum_height += static_cast<std::size_t>(image.height);
  counts.min_width = std::min(counts.min_width, image.width);
  counts.max_width = std::max(counts.max_width, image.width);
  counts.min_height = std::min(counts.min_height, image.height);
  counts.max_height = std::max(counts.max_height, image.height);
}

SplitCounts write_split(const MakeImagesArgs& a, const std::string& name, std::uint64_t split_id,
                        std::size_t count) {
  const fs::path cifar = fs::path(a.data_dir) / "cifar-10";
  std::vector<fs::path> files;
  if (name == "val") {
    files.push_back(cifar / "test_batch.bin");
  } else {
    // --like imagenet reuses the 50000 images in turn beyond them.
    const std::size_t needed = std::min(count, 5 * kCifarPerFile);
    for (std::size_t f = 0; f * kCifarPerFile < needed; ++f) {
      files.push_back(cifar / fmt::format("data_batch_{}.bin", f + 1));
    }
  }
  const fs::path dir = fs::path(a.out) / name;
  const std::vector<std::string> names = class_names(a);
  // Every class folder, even an empty one, so the class count is always that of the names.
  for (const auto& c : names) fs::create_directories(dir / c);
  SplitCounts counts;
  if (count == 0) return counts;
  const data::InMemorySplit split = data::read_cifar10_split(files);
  for (std::size_t i = 0; i < count; ++i) {
    write_image(a, split, names, dir, split_id, i, count, counts);
  }
  return counts;
}

// The three damaged files of --damaged, after the train images; returns their paths.
std::vector<std::string> write_damaged(const MakeImagesArgs& a) {
  const fs::path train = fs::path(a.out) / "train";
  const std::vector<std::string> names = class_names(a);
  const std::size_t n = a.train;
  RawImage pattern{64, 64, PixelKind::kRgb, std::vector<std::uint8_t>(64 * 64 * 3)};
  for (std::size_t p = 0; p < pattern.pixels.size(); ++p)
    pattern.pixels[p] = static_cast<std::uint8_t>(p * 7);
  std::vector<std::uint8_t> truncated = encode_jpeg(pattern, kJpegQuality);
  truncated.resize(truncated.size() / 2);
  const std::string text =
      "This is not an image: conflux-bench make-images --damaged wrote it to test "
      "data.on_corrupt.\n";
  const std::vector<std::pair<fs::path, std::vector<std::uint8_t>>> files = {
      {train / names[0] / fmt::format("{:06d}.jpg", n), truncated},
      {train / names[1 % names.size()] / fmt::format("{:06d}.jpg", n + 1),
       {text.begin(), text.end()}},
      {train / names[2 % names.size()] / fmt::format("{:06d}.jpg", n + 2), {}},
  };
  std::vector<std::string> paths;
  for (const auto& [path, bytes] : files) {
    write_file(path, bytes);
    paths.push_back(path.string());
  }
  return paths;
}

std::string describe(const MakeImagesArgs& a) {
  if (!a.like.empty()) {
    return fmt::format(
        "ImageNet-like: photographs' sizes, aspect ratios and JPEG statistics, CIFAR-10 "
        "content with drawn texture, {} classes",
        a.classes);
  }
  return fmt::format("CIFAR-10 images upscaled to ImageNet-like sizes ({})",
                     a.min_side > 0
                         ? fmt::format("{}-{} px per side, bilinear", a.min_side, a.max_side)
                         : std::string("kept at 32x32"));
}

void add_row(Table& table, const std::string& split, std::size_t images, const SplitCounts& c) {
  const double n = images > 0 ? static_cast<double>(images) : 1.0;
  const auto& f = c.files;
  table.add_row(
      {split, images, f[0], f[1], f[2], f[3], f[4], static_cast<double>(c.bytes) / 1e6,
       static_cast<double>(c.sum_width) / n, static_cast<double>(c.sum_height) / n,
       static_cast<double>(c.bytes) / 1e3 / n,
       static_cast<double>(c.bytes) / static_cast<double>(std::max<std::size_t>(c.pixels, 1)),
       images > 0 ? c.min_width : 0, c.max_width, images > 0 ? c.min_height : 0, c.max_height});
}

}  // namespace

int run_make_images(const std::vector<std::string>& args, const comm::Communicator& world) {
  if (world.rank() != 0) return 0;
  MakeImagesArgs a;
  CommonOptions common;
  const auto vm = parse(args, a, common, world);
  if (!vm) return 0;
  const fs::path out(a.out);
  CONFLUX_REQUIRE(!fs::exists(out) || (fs::is_directory(out) && fs::is_empty(out)),
                  "make-images: --out {}: exists and is not an empty directory", a.out);
  fmt::print("make-images: {}; a stand-in for ImageNet, not ImageNet\n", describe(a));
  Report report("make-images", common);
  report.add_parameters(*vm);
  Table& table = report.add_table(Table("files", fmt::format("files written into {}", a.out),
                                        {"split",
                                         "images",
                                         "jpeg rgb",
                                         "jpeg gray",
                                         "jpeg cmyk",
                                         "png rgb",
                                         "png rgba",
                                         {"MB", 2},
                                         {"mean width", 1},
                                         {"mean height", 1},
                                         {"KB/file", 1},
                                         {"bytes/pixel", 3},
                                         "width min",
                                         "width max",
                                         "height min",
                                         "height max"}));
  const std::pair<std::string, std::size_t> splits[] = {{"train", a.train}, {"val", a.val}};
  for (std::uint64_t s = 0; s < 2; ++s) {
    add_row(table, splits[s].first, splits[s].second,
            write_split(a, splits[s].first, s, splits[s].second));
  }
  table.print();
  if (a.damaged) {
    for (const auto& path : write_damaged(a)) fmt::print("damaged: {}\n", path);
  }
  if (!a.hdf5_arrays.empty()) {
    const ArraysWritten n = write_hdf5_arrays(out, a.hdf5_arrays);
    fmt::print("hdf5 arrays: {} ({} train, {} test images, 32x32x3 hwc uint8, int64 labels)\n",
               a.hdf5_arrays, n.train, n.test);
  }
  report.set_summary("images", a.train + a.val);
  report.write();
  return 0;
}

}  // namespace conflux::bench
