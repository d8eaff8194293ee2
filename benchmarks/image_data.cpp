// conflux-bench make-images: an ImageNet-style folder of JPEG and PNG files made from the real
// CIFAR-10 images, upscaled to ImageNet-like sizes, as a stand-in for ImageNet in tests and
// decode benchmarks. Deterministic: the same options give the same bytes.

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

#include "conflux/config/environment.hpp"
#include "conflux/core/error.hpp"
#include "conflux/core/rng.hpp"
#include "conflux/data/io/cifar_reader.hpp"
#include "image_arrays.hpp"
#include "image_encode.hpp"
#include "report.hpp"
#include "scenarios.hpp"

namespace conflux::bench {

namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

constexpr std::size_t kCifarPerFile = 10000;
constexpr int kJpegQuality = 90;

struct MakeImagesArgs {
  std::string data_dir = environment_data_dir();  // as conflux: $CONFLUX_DATA, else per-user
  std::string out;
  std::size_t train = 1000;
  std::size_t val = 200;
  std::string size = "0";
  std::uint64_t seed = 1;
  std::size_t png_every = 0;
  std::size_t gray_every = 0;
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

std::optional<po::variables_map> parse(const std::vector<std::string>& args, MakeImagesArgs& a,
                                       CommonOptions& common, const comm::Communicator& world) {
  po::options_description options(
      "conflux-bench make-images options (CIFAR-10 images upscaled to ImageNet-like sizes, "
      "written as an ImageNet-style folder <out>/{train,val}/<class>/<index>.jpg|png)");
  options.add_options()("help,h", "show this help")(
      "data-dir", po::value(&a.data_dir)->default_value(a.data_dir),
      "directory holding cifar-10/ (data_batch_*.bin, test_batch.bin); --data works too")(
      "out", po::value(&a.out)->required(), "new or empty directory to write into")(
      "train", po::value(&a.train)->default_value(a.train),
      "train images (from data_batch_1.bin on, at most 50000)")(
      "val", po::value(&a.val)->default_value(a.val),
      "val images (from test_batch.bin, at most 10000)")(
      "size", po::value(&a.size)->default_value(a.size),
      "MIN-MAX: upscale each image (bilinear) to a width and a height drawn in [MIN, MAX] "
      "from --seed and its index, so aspect ratios vary; 0 keeps 32x32")(
      "seed", po::value(&a.seed)->default_value(a.seed), "seed of the drawn sizes")(
      "png-every", po::value(&a.png_every)->default_value(a.png_every),
      "write every K-th image as PNG, every other one of those RGBA (0: none)")(
      "gray-every", po::value(&a.gray_every)->default_value(a.gray_every),
      "write every K-th image as a grayscale JPEG, unless it is a PNG (0: none)")(
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
  CONFLUX_REQUIRE(a.train <= 5 * kCifarPerFile, "make-images: --train {} > 50000", a.train);
  CONFLUX_REQUIRE(a.val <= kCifarPerFile, "make-images: --val {} > 10000", a.val);
  CONFLUX_REQUIRE(a.hdf5_arrays.empty() || (a.min_side == 0 && !a.damaged),
                  "make-images: --hdf5-arrays needs --size 0 (fixed 32x32 images) and no "
                  "--damaged");
  return vm;
}

// Image i of a CIFAR-10 split (CHW planes) as interleaved RGB.
RawImage cifar_image(const data::Dataset& split, std::size_t i) {
  const auto chw = split.image(i);
  const int side = split.shape.width;
  const std::size_t plane = static_cast<std::size_t>(side) * side;
  RawImage image{side, side, PixelKind::kRgb, std::vector<std::uint8_t>(3 * plane)};
  for (std::size_t p = 0; p < plane; ++p) {
    for (std::size_t c = 0; c < 3; ++c) image.pixels[3 * p + c] = chw[c * plane + p];
  }
  return image;
}

// Source positions of one axis for bilinear resizing, in 1/256 pixel: integer arithmetic, so
// the bytes written do not depend on the machine.
struct Tap {
  int i0, i1, w1;
};

std::vector<Tap> taps(int src, int dst) {
  std::vector<Tap> out(static_cast<std::size_t>(dst));
  for (int d = 0; d < dst; ++d) {
    // Pixel centres: source position (d + 0.5) * src / dst - 0.5, clamped at the edges.
    const long long twice = std::max(0LL, (2LL * d + 1) * src - dst);
    const long long pos = twice * 256 / (2LL * dst);
    const int i0 = std::min(static_cast<int>(pos >> 8), src - 1);
    out[static_cast<std::size_t>(d)] = {i0, std::min(i0 + 1, src - 1), static_cast<int>(pos & 255)};
  }
  return out;
}

RawImage resize_bilinear(const RawImage& src, int width, int height) {
  const int ch = channels_of(src.kind);
  RawImage out{width, height, src.kind,
               std::vector<std::uint8_t>(static_cast<std::size_t>(width) * height * ch)};
  const auto xs = taps(src.width, width);
  const auto ys = taps(src.height, height);
  auto at = [&](int y, int x, int c) -> int {
    return src.pixels[(static_cast<std::size_t>(y) * src.width + x) * ch + c];
  };
  std::size_t o = 0;
  for (const Tap& ty : ys) {
    for (const Tap& tx : xs) {
      for (int c = 0; c < ch; ++c) {
        const int top = at(ty.i0, tx.i0, c) * (256 - tx.w1) + at(ty.i0, tx.i1, c) * tx.w1;
        const int bottom = at(ty.i1, tx.i0, c) * (256 - tx.w1) + at(ty.i1, tx.i1, c) * tx.w1;
        out.pixels[o++] =
            static_cast<std::uint8_t>((top * (256 - ty.w1) + bottom * ty.w1 + 32768) >> 16);
      }
    }
  }
  return out;
}

RawImage with_alpha(const RawImage& rgb) {
  RawImage out{rgb.width, rgb.height, PixelKind::kRgba, {}};
  out.pixels.reserve(rgb.pixels.size() / 3 * 4);
  for (int y = 0; y < rgb.height; ++y) {
    for (int x = 0; x < rgb.width; ++x) {
      const std::size_t p = (static_cast<std::size_t>(y) * rgb.width + x) * 3;
      out.pixels.insert(out.pixels.end(), rgb.pixels.begin() + p, rgb.pixels.begin() + p + 3);
      // A diagonal ramp from opaque to half transparent: real alpha, never all 255.
      out.pixels.push_back(
          static_cast<std::uint8_t>(255 - (x + y) * 128 / (rgb.width + rgb.height)));
    }
  }
  return out;
}

RawImage to_gray(const RawImage& rgb) {
  RawImage out{rgb.width, rgb.height, PixelKind::kGray, {}};
  for (std::size_t p = 0; p < rgb.pixels.size(); p += 3) {
    const unsigned r = rgb.pixels[p], g = rgb.pixels[p + 1], b = rgb.pixels[p + 2];
    out.pixels.push_back(
        static_cast<std::uint8_t>((19595 * r + 38470 * g + 7471 * b + 32768) >> 16));
  }
  return out;
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
  std::size_t jpeg_rgb = 0, jpeg_gray = 0, png_rgb = 0, png_rgba = 0, bytes = 0;
  int min_width = 1 << 30, max_width = 0, min_height = 1 << 30, max_height = 0;
};

// Writes image i of `split` (named `name`, stream id `split_id`) and counts it.
void write_image(const MakeImagesArgs& a, const data::Dataset& split, const fs::path& dir,
                 std::uint64_t split_id, std::size_t i, SplitCounts& counts) {
  RawImage image = cifar_image(split, i);
  if (a.min_side > 0) {
    Rng rng{a.seed, split_id, i};
    const auto span = static_cast<std::uint64_t>(a.max_side - a.min_side + 1);
    const int width = a.min_side + static_cast<int>(rng.below(span));
    const int height = a.min_side + static_cast<int>(rng.below(span));
    image = resize_bilinear(image, width, height);
  }
  const bool png = a.png_every > 0 && i % a.png_every == a.png_every - 1;
  const bool gray = !png && a.gray_every > 0 && i % a.gray_every == a.gray_every - 1;
  const bool rgba = png && (i / a.png_every) % 2 == 1;
  std::vector<std::uint8_t> bytes;
  if (png) {
    bytes = encode_png(rgba ? with_alpha(image) : image);
    ++(rgba ? counts.png_rgba : counts.png_rgb);
  } else {
    bytes = encode_jpeg(gray ? to_gray(image) : image, kJpegQuality);
    ++(gray ? counts.jpeg_gray : counts.jpeg_rgb);
  }
  const auto& label_name =
      data::cifar10_class_names().at(static_cast<std::size_t>(split.labels[i]));
  write_file(dir / label_name / fmt::format("{:06d}.{}", i, png ? "png" : "jpg"), bytes);
  counts.bytes += bytes.size();
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
    for (std::size_t f = 0; f * kCifarPerFile < count; ++f) {
      files.push_back(cifar / fmt::format("data_batch_{}.bin", f + 1));
    }
  }
  const fs::path dir = fs::path(a.out) / name;
  // Every class folder, even an empty one, so the class count is always 10.
  for (const auto& c : data::cifar10_class_names()) fs::create_directories(dir / c);
  SplitCounts counts;
  if (count == 0) return counts;
  const data::Dataset split = data::read_cifar10_split(files);
  for (std::size_t i = 0; i < count; ++i) write_image(a, split, dir, split_id, i, counts);
  return counts;
}

// The three damaged files of --damaged, after the train images; returns their paths.
std::vector<std::string> write_damaged(const MakeImagesArgs& a) {
  const fs::path train = fs::path(a.out) / "train";
  const auto& names = data::cifar10_class_names();
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
      {train / names[1] / fmt::format("{:06d}.jpg", n + 1), {text.begin(), text.end()}},
      {train / names[2] / fmt::format("{:06d}.jpg", n + 2), {}},
  };
  std::vector<std::string> paths;
  for (const auto& [path, bytes] : files) {
    write_file(path, bytes);
    paths.push_back(path.string());
  }
  return paths;
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
  fmt::print(
      "make-images: CIFAR-10 images upscaled to ImageNet-like sizes ({}); a stand-in for "
      "ImageNet, not ImageNet\n",
      a.min_side > 0 ? fmt::format("{}-{} px per side, bilinear", a.min_side, a.max_side)
                     : std::string("kept at 32x32"));
  Report report("make-images", common);
  report.add_parameters(*vm);
  Table& table = report.add_table(Table("files", fmt::format("files written into {}", a.out),
                                        {"split",
                                         "images",
                                         "jpeg rgb",
                                         "jpeg gray",
                                         "png rgb",
                                         "png rgba",
                                         {"MB", 2},
                                         "width min",
                                         "width max",
                                         "height min",
                                         "height max"}));
  const std::pair<std::string, std::size_t> splits[] = {{"train", a.train}, {"val", a.val}};
  for (std::uint64_t s = 0; s < 2; ++s) {
    const SplitCounts c = write_split(a, splits[s].first, s, splits[s].second);
    table.add_row({splits[s].first, splits[s].second, c.jpeg_rgb, c.jpeg_gray, c.png_rgb,
                   c.png_rgba, static_cast<double>(c.bytes) / 1e6,
                   splits[s].second > 0 ? c.min_width : 0, c.max_width,
                   splits[s].second > 0 ? c.min_height : 0, c.max_height});
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
