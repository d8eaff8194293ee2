// conflux-bench decode: how fast conflux decodes JPEGs on one thread, against the plain
// TurboJPEG loop any loader would write (tjDecompressHeader3 + tjDecompress2 to interleaved
// RGB with the same flags). The difference is what conflux adds: format sniffing, the checks,
// and the conversion to CHW. Both decode the same in-memory files, interleaved repetitions.
//
// With --resized-crop N it times RandomResizedCrop(N) training samples instead, through the
// BatchBuilder training uses, on one thread: transform.decode = "full" (decode the whole
// image, then crop and resize) against "region" (decode only the crop's window at the
// smallest DCT scale covering N), and reports the ratio of their images/s. With --scales it
// times the whole images decoded by the region decoder at each scale k/8, the measurement
// behind region_scale()'s choice of 1/8, 2/8, 4/8 and 8/8 only.

#include <fmt/format.h>
#include <turbojpeg.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/data/io/image_codec.hpp"
#include "conflux/data/io/jpeg_region.hpp"
#include "conflux/data/io/turbojpeg_handle.hpp"
#include "conflux/data/pipeline/batch_builder.hpp"
#include "report.hpp"
#include "scenarios.hpp"

namespace conflux::bench {

namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

struct DecodeArgs {
  std::string images;
  std::size_t limit = 1000;
  int repetitions = 5;
  int resized_crop = 0;  // > 0: time RandomResizedCrop(N) with full vs region decode
  bool scales = false;   // time the whole images at every scale k/8
};

std::optional<po::variables_map> parse(const std::vector<std::string>& args, DecodeArgs& a,
                                       CommonOptions& common, const comm::Communicator& world) {
  po::options_description options("conflux-bench decode options");
  options.add_options()("help,h", "show this help")(
      "images", po::value(&a.images)->required(),
      "folder searched recursively for *.jpg / *.jpeg (e.g. made by make-images --size 200-500); "
      "files that are not decodable JPEGs are skipped and counted")(
      "limit", po::value(&a.limit)->default_value(a.limit), "at most this many files (by path)")(
      "repetitions", po::value(&a.repetitions)->default_value(a.repetitions),
      "timed passes per decoder, interleaved; the median pass is reported")(
      "resized-crop", po::value(&a.resized_crop)->default_value(a.resized_crop),
      "N > 0: time training samples of RandomResizedCrop(N) + flip through BatchBuilder on one "
      "thread, transform.decode = \"full\" vs \"region\", instead of the plain decode")(
      "scales", po::bool_switch(&a.scales),
      "time the whole images decoded by the region decoder at each scale 1/8 .. 8/8 instead");
  auto vm = parse_scenario_options("decode", args, options, common, world);
  if (vm) {
    CONFLUX_REQUIRE(a.limit > 0, "decode: --limit must be positive");
    CONFLUX_REQUIRE(a.repetitions > 0, "decode: --repetitions must be positive");
    CONFLUX_REQUIRE(a.resized_crop >= 0 && a.resized_crop <= 4096,
                    "decode: --resized-crop {} must lie in [0, 4096] (0 = plain decode)",
                    a.resized_crop);
  }
  return vm;
}

struct JpegFile {
  std::string path;
  std::vector<std::uint8_t> bytes;
  std::size_t pixels = 0;  // width x height
};

bool is_jpeg_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg";
}

// The decodable JPEGs under `dir`, in path order, read into memory; `skipped` counts the rest.
std::vector<JpegFile> load_jpegs(const DecodeArgs& a, std::size_t& skipped) {
  CONFLUX_REQUIRE(fs::is_directory(a.images), "decode: --images {}: not a directory", a.images);
  std::vector<fs::path> paths;
  for (const auto& entry : fs::recursive_directory_iterator(a.images)) {
    if (entry.is_regular_file() && is_jpeg_name(entry.path())) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<JpegFile> files;
  data::DecodedImage image;
  for (const auto& path : paths) {
    if (files.size() == a.limit) break;
    std::ifstream in(path, std::ios::binary);
    JpegFile f{path.string(), {std::istreambuf_iterator<char>(in), {}}, 0};
    if (data::sniff_format(f.bytes) != data::ImageFormat::kJpeg) {  // a PNG named .jpg, text
      ++skipped;
      continue;
    }
    try {
      data::decode_image(f.bytes, data::DecodeOptions{}, f.path, image);  // also warms up
      f.pixels = static_cast<std::size_t>(image.shape.height) * image.shape.width;
      files.push_back(std::move(f));
    } catch (const data::CorruptSampleError&) {
      ++skipped;
    }
  }
  CONFLUX_REQUIRE(!files.empty(), "decode: no decodable JPEG under {}", a.images);
  return files;
}

using Clock = std::chrono::steady_clock;

// One pass of the baseline: what a loader written directly on TurboJPEG does.
double baseline_pass(const std::vector<JpegFile>& files, std::vector<std::uint8_t>& rgb) {
  const data::TurboJpegHandle handle = data::TurboJpegHandle::decompressor();
  const auto start = Clock::now();
  for (const JpegFile& f : files) {
    int width = 0, height = 0, subsampling = 0, colorspace = 0;
    const auto size = static_cast<unsigned long>(f.bytes.size());
    CONFLUX_CHECK(tjDecompressHeader3(handle.get(), f.bytes.data(), size, &width, &height,
                                      &subsampling, &colorspace) == 0,
                  "{}: {}", f.path, tjGetErrorStr2(handle.get()));
    // CMYK files (ImageNet has 22) decode only to CMYK: the baseline takes them as they are.
    const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
    rgb.resize(static_cast<std::size_t>(width) * height * (cmyk ? 4 : 3));
    CONFLUX_CHECK(tjDecompress2(handle.get(), f.bytes.data(), size, rgb.data(), width, 0, height,
                                cmyk ? TJPF_CMYK : TJPF_RGB, data::turbojpeg_decode_flags()) == 0,
                  "{}: {}", f.path, tjGetErrorStr2(handle.get()));
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double conflux_pass(const std::vector<JpegFile>& files, data::DecodedImage& image) {
  const auto start = Clock::now();
  for (const JpegFile& f : files) data::decode_image(f.bytes, data::DecodeOptions{}, f.path, image);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The loaded files as a dataset of images of any size, as an image folder gives them.
class MemorySource final : public data::SampleSource {
 public:
  explicit MemorySource(const std::vector<JpegFile>& files) : files_(files) {
    info_.name = "decode-bench";
    info_.format = data::SampleFormat::kEncoded;
    info_.shape = {3, 0, 0};
    info_.num_classes = 1;
  }
  const data::SourceInfo& info() const noexcept override { return info_; }
  std::size_t size() const noexcept override { return files_.size(); }
  model::Label label(std::size_t) const override { return 0; }
  void read(std::size_t i, std::vector<std::uint8_t>& out) const override { out = files_[i].bytes; }
  std::string where(std::size_t i) const override { return files_[i].path; }
  std::size_t resident_bytes() const noexcept override { return 0; }

 private:
  const std::vector<JpegFile>& files_;
  data::SourceInfo info_;
};

// One pass of training samples over every file (epoch `pass`, so each pass draws new crops),
// in batches of 64 built on one thread.
double crop_pass(data::BatchBuilder& builder, std::size_t n, std::uint32_t pass) {
  constexpr std::size_t kBatch = 64;
  std::vector<std::byte> images(kBatch * builder.bytes_per_sample());
  std::vector<model::Label> labels(kBatch);
  std::vector<std::uint32_t> samples;
  const auto start = Clock::now();
  for (std::size_t begin = 0; begin < n; begin += kBatch) {
    samples.clear();
    for (std::size_t i = begin; i < std::min(n, begin + kBatch); ++i)
      samples.push_back(static_cast<std::uint32_t>(i));
    builder.build_train_encoded(samples, 1, pass, images.data(), labels.data());
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// --scales: the region decoder on whole images at each k/8, interleaved passes.
int run_scales(const DecodeArgs& a, const po::variables_map& vm, const CommonOptions& common,
               const std::vector<JpegFile>& files) {
  data::JpegRegionDecoder decoder;
  data::DecodedImage image;
  std::vector<std::vector<double>> times(8);
  for (int r = 0; r < a.repetitions; ++r) {
    for (int k = 1; k <= 8; ++k) {
      const auto start = Clock::now();
      for (const JpegFile& f : files) {
        const data::PixelWindow whole = decoder.read_header(f.bytes, f.path);
        decoder.decode({.window = whole, .scale_eighths = k}, image);
      }
      times[k - 1].push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
  }
  Report report("decode", common);
  report.add_parameters(vm);
  Table& table = report.add_table(
      Table("scales",
            fmt::format("Whole JPEGs through the region decoder at each scale, 1 thread: {} "
                        "files from {}, median of {} passes",
                        files.size(), a.images, a.repetitions),
            {"scale", {"ms/image", 2}, {"vs 8/8", 3}}));
  const double full = median(times[7]);
  for (int k = 1; k <= 8; ++k) {
    const double t = median(times[k - 1]);
    table.add_row({fmt::format("{}/8", k), 1e3 * t / static_cast<double>(files.size()), t / full});
  }
  table.print();
  report.write();
  return 0;
}

// --resized-crop: full vs region decode, interleaved passes (the same epochs for both, so
// both draw the same crops).
int run_resized_crop(const DecodeArgs& a, const po::variables_map& vm, const CommonOptions& common,
                     const std::vector<JpegFile>& files, std::size_t skipped, double megapixels) {
  const MemorySource source(files);
  data::TransformOptions options;
  options.resized_crop = a.resized_crop;
  options.hflip = true;
  options.decode = "full";
  const data::SampleTransform full(options, source.info().shape);
  options.decode = "region";
  const data::SampleTransform region(options, source.info().shape);
  data::BatchBuilder full_builder(source, full, 1), region_builder(source, region, 1);
  std::vector<double> t_full, t_region;
  for (int r = 0; r < a.repetitions; ++r) {
    const auto epoch = static_cast<std::uint32_t>(r);
    if (r % 2 == 0) t_full.push_back(crop_pass(full_builder, files.size(), epoch));
    t_region.push_back(crop_pass(region_builder, files.size(), epoch));
    if (r % 2 == 1) t_full.push_back(crop_pass(full_builder, files.size(), epoch));
  }
  const double n = static_cast<double>(files.size());
  const double f = n / median(t_full), g = n / median(t_region);
  Report report("decode", common);
  report.add_parameters(vm);
  report.set_parameter("files", files.size());
  report.set_parameter("skipped", skipped);
  Table& table = report.add_table(Table(
      "resized_crop",
      fmt::format("RandomResizedCrop({}) + flip training samples, BatchBuilder on 1 thread: {} "
                  "JPEGs ({:.1f} Mpixel; {} skipped) from {}, median of {} passes",
                  a.resized_crop, files.size(), megapixels, skipped, a.images, a.repetitions),
      {"transform.decode", {"images/s", 1}, {"vs full", 3}}));
  table.add_row({"full (whole image, then crop + resize)", f, 1.0});
  table.add_row({"region (crop's window at the smallest k/8 covering it)", g, g / f});
  table.print();
  fmt::print("region / full throughput: {:.3f} (target >= 2: {})\n", g / f,
             g / f >= 2.0 ? "met" : "MISSED");
  report.set_summary("ratio", g / f);
  report.set_summary("full_images_per_s", f);
  report.set_summary("region_images_per_s", g);
  report.write();
  return 0;
}

}  // namespace

int run_decode(const std::vector<std::string>& args, const comm::Communicator& world) {
  if (world.rank() != 0) return 0;
  DecodeArgs a;
  CommonOptions common;
  const auto vm = parse(args, a, common, world);
  if (!vm) return 0;
  std::size_t skipped = 0;
  const std::vector<JpegFile> files = load_jpegs(a, skipped);
  double megabytes = 0, megapixels = 0;
  for (const auto& f : files) {
    megabytes += static_cast<double>(f.bytes.size()) / 1e6;
    megapixels += static_cast<double>(f.pixels) / 1e6;
  }
  if (a.resized_crop > 0) return run_resized_crop(a, *vm, common, files, skipped, megapixels);
  if (a.scales) return run_scales(a, *vm, common, files);
  // Interleaved, and alternating which goes first, so drift on a shared machine hits both.
  std::vector<double> baseline, conflux;
  std::vector<std::uint8_t> rgb;
  data::DecodedImage image;
  for (int r = 0; r < a.repetitions; ++r) {
    if (r % 2 == 0) baseline.push_back(baseline_pass(files, rgb));
    conflux.push_back(conflux_pass(files, image));
    if (r % 2 == 1) baseline.push_back(baseline_pass(files, rgb));
  }
  const double t_base = median(baseline), t_conflux = median(conflux);
  const double n = static_cast<double>(files.size());
  const double ratio = t_base / t_conflux;  // throughput ratio conflux / baseline

  Report report("decode", common);
  report.add_parameters(*vm);
  report.set_parameter("files", files.size());
  report.set_parameter("skipped", skipped);
  Table& table = report.add_table(Table(
      "decode",
      fmt::format("JPEG decode, 1 thread: {} files ({:.1f} MB, {:.1f} Mpixel; {} skipped) from "
                  "{}, median of {} passes",
                  files.size(), megabytes, megapixels, skipped, a.images, a.repetitions),
      {"decoder", {"images/s", 1}, {"MB/s in", 1}, {"Mpixel/s", 1}, {"vs baseline", 3}}));
  table.add_row({"TurboJPEG loop -> RGB HWC (baseline)", n / t_base, megabytes / t_base,
                 megapixels / t_base, 1.0});
  table.add_row({"conflux decode_image -> RGB CHW", n / t_conflux, megabytes / t_conflux,
                 megapixels / t_conflux, ratio});
  table.print();
  fmt::print("conflux / baseline throughput: {:.3f} (target >= 0.90: {})\n", ratio,
             ratio >= 0.90 ? "met" : "MISSED");
  report.set_summary("ratio", ratio);
  report.set_summary("baseline_images_per_s", n / t_base);
  report.set_summary("conflux_images_per_s", n / t_conflux);
  report.write();
  return 0;
}

}  // namespace conflux::bench
