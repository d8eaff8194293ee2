// `conflux data`: datasets on disk: `convert` a built-in one into one HDF5 file, `info` on such
// a file, `pack` your images (pack_command.cpp).

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "command.hpp"
#include "conflux/config/environment.hpp"
#include "conflux/data/io/catalog.hpp"
#include "conflux/data/io/hdf5_splits.hpp"
#include "pack_command.hpp"

namespace po = boost::program_options;

namespace conflux::cli {
namespace {

int run_convert(const Invocation& inv) {
  std::string dataset, output, data_dir = environment_data_dir();
  po::options_description options("conflux data convert options");
  options.add_options()("help,h", "show this help")("dataset", po::value(&dataset)->required(),
                                                    "mnist | fashion-mnist | cifar10")(
      "output,o", po::value(&output)->required(), "HDF5 file to write")(
      "data-dir", po::value(&data_dir), "directory with the original files");
  if (!parse_options(inv, options)) return 0;
  const auto splits = data::load_dataset(dataset, data_dir);
  data::write_hdf5_splits(output, splits);
  fmt::print("wrote {} ({} train + {} test samples)\n", output, splits.train.size(),
             splits.test.size());
  return 0;
}

int run_info(const Invocation& inv) {
  const auto file = operands(inv, 1, 1);
  if (!file) return 0;
  const auto splits = data::read_hdf5_splits(file->front());
  for (const auto* split : {&splits.train, &splits.test}) {
    fmt::print("{} {}: {} samples of {}x{}x{}, {} classes\n", split->name,
               split == &splits.train ? "train" : "test", split->size(), split->shape.channels,
               split->shape.height, split->shape.width, split->num_classes);
  }
  for (const auto& src : splits.train.sources) fmt::print("  {}  {}\n", src.sha256, src.name);
  for (const auto& src : splits.test.sources) fmt::print("  {}  {}\n", src.sha256, src.name);
  return 0;
}

}  // namespace

const Command& data_command() {
  static const Command convert{
      .name = "convert",
      .usage = "conflux data convert --dataset NAME --output FILE.h5 [--data-dir DIR]",
      .summary = "a built-in dataset as one HDF5 file",
      .help =
          "Reads the original files of mnist, fashion-mnist or cifar10 from DIR (default: "
          "$CONFLUX_DATA, "
          "else " CONFLUX_USER_DATA_DIR
          ") and writes both splits, with the "
          "SHA-256 of every source file, to FILE.h5; train from it with "
          "data.hdf5_file = FILE.h5. docs/datasets.md.",
      .run = run_convert};
  static const Command info{.name = "info",
                            .usage = "conflux data info FILE.h5",
                            .summary = "describe a converted dataset",
                            .help =
                                "Prints each split's size, sample shape and classes, and "
                                "the SHA-256 of the files it was converted from.",
                            .run = run_info};
  static const Command group{.name = "data",
                             .usage = "",
                             .summary = "",
                             .help = "",
                             .actions = {&convert, &info, &data_pack_command()}};
  return group;
}

}  // namespace conflux::cli
