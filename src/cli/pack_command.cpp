#include "pack_command.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <iostream>
#include <memory>
#include <sstream>

#include "conflux/core/error.hpp"
#include "conflux/data/io/image_folder_source.hpp"
#include "conflux/data/io/pack_writer.hpp"

namespace po = boost::program_options;

namespace conflux::cli {
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    CONFLUX_REQUIRE(!item.empty(), "--splits '{}': an empty split name", text);
    out.push_back(item);
  }
  CONFLUX_REQUIRE(!out.empty(), "--splits: no split named");
  return out;
}

int run_pack(const Invocation& inv) {
  std::string dataset, path, out, splits = "train,val";
  std::uint64_t shard_mb = 1024;
  po::options_description options("conflux data pack options");
  options.add_options()("help,h", "show this help")("dataset", po::value(&dataset)->required(),
                                                    "image-folder (the only one packed today)")(
      "path", po::value(&path)->required(), "the image folder's root (holding the split folders)")(
      "out,o", po::value(&out)->required(), "the pack directory to create")(
      "splits", po::value(&splits)->default_value(splits),
      "split folders to pack, comma-separated")(
      "shard-mb", po::value(&shard_mb)->default_value(shard_mb), "target shard size in MB");
  if (!parse_options(inv, options)) return 0;
  CONFLUX_REQUIRE(dataset == "image-folder",
                  "conflux data pack: --dataset '{}': only image-folder can be packed", dataset);
  CONFLUX_REQUIRE(shard_mb > 0 && shard_mb <= (std::uint64_t{1} << 30),
                  "conflux data pack: --shard-mb {}: expected 1 .. 2^30", shard_mb);
  std::vector<std::unique_ptr<data::ImageFolderSource>> sources;
  std::vector<data::PackSplit> pack_splits;
  for (const std::string& split : split_list(splits)) {
    // Channels matter only when decoding; a pack holds the files as they are.
    sources.push_back(std::make_unique<data::ImageFolderSource>(path, split, 3));
    const data::ImageFolderSource* source = sources.back().get();
    pack_splits.push_back(
        {split, source, [source](std::size_t i) { return source->relative_name(i); }});
  }
  const data::PackSummary summary =
      data::write_pack(out, pack_splits, {.shard_bytes = shard_mb << 20});
  fmt::print("wrote {}: {} samples, {} bytes in {} shards\n", out, summary.samples, summary.bytes,
             summary.shards);
  return 0;
}

}  // namespace

const Command& data_pack_command() {
  static const Command command{
      .name = "pack",
      .usage =
          "conflux data pack --dataset image-folder --path ROOT --out DIR "
          "[--splits train,val] [--shard-mb N]",
      .summary = "pack an image folder into HDF5 shards",
      .help =
          "Copies the image files of ROOT/<split>/<class>/*.{jpg,jpeg,png} into DIR: index.h5 "
          "and shards <split>-00000.h5, ... of about N MB each (HDF5, readable with h5py; "
          "docs/datasets.md). Train from it with data.dataset = \"packed\" and data.path = "
          "DIR. DIR must not exist (or be empty); nothing appears there until the whole pack "
          "is written. Packing the same files twice gives identical bytes.",
      .run = run_pack};
  return command;
}

}  // namespace conflux::cli
