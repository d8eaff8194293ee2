#include "conflux/data/io/catalog.hpp"

#include <fmt/format.h>

#include "conflux/config/keys.hpp"
#include "conflux/core/error.hpp"
#include "conflux/data/io/cifar_reader.hpp"
#include "conflux/data/io/idx_reader.hpp"

namespace conflux::data {
namespace {

namespace fs = std::filesystem;

// Where conflux looks and how to point it elsewhere (docs/design.md, "Data directory").
constexpr const char* kWhereToPoint =
    "conflux reads the datasets from data.dir, else $CONFLUX_DATA, else " CONFLUX_USER_DATA_DIR
    "; set data.dir in the config (or --set data.dir=DIR) or the CONFLUX_DATA environment "
    "variable to the directory holding mnist/, fashion-mnist/ and cifar-10/, or put them in "
    "the per-user directory";

const std::vector<std::string>& mnist_class_names() {
  static const std::vector<std::string> names = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
  return names;
}

const std::vector<std::string>& fashion_mnist_class_names() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                 "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                 "Bag",         "Ankle boot"};
  return names;
}

/// The dataset's directory; InputError when it is absent.
fs::path dataset_dir(const fs::path& data_dir, const char* sub_dir, const std::string& name) {
  // Empty when nothing named a directory ($HOME unset too): never the working directory.
  CONFLUX_REQUIRE(!data_dir.empty(), "no data directory for dataset '{}'; {}", name, kWhereToPoint);
  const fs::path dir = data_dir / sub_dir;
  std::error_code ec;
  CONFLUX_REQUIRE(fs::is_directory(dir, ec), "{}: directory of dataset '{}' not found; {}",
                  dir.string(), name, kWhereToPoint);
  return dir;
}

/// Checks every file up front, so a missing test file is reported before minutes of reading.
void require_files(const std::vector<fs::path>& files, const std::string& name) {
  for (const auto& file : files) {
    std::error_code ec;
    CONFLUX_REQUIRE(fs::is_regular_file(file, ec), "{}: file of dataset '{}' not found; {}",
                    file.string(), name, kWhereToPoint);
  }
}

InMemorySplits load_idx(const std::string& name, const fs::path& dir,
                        const std::vector<std::string>& class_names) {
  const fs::path train_images = dir / "train-images-idx3-ubyte.gz";
  const fs::path train_labels = dir / "train-labels-idx1-ubyte.gz";
  const fs::path test_images = dir / "t10k-images-idx3-ubyte.gz";
  const fs::path test_labels = dir / "t10k-labels-idx1-ubyte.gz";
  require_files({train_images, train_labels, test_images, test_labels}, name);
  return {read_idx_split(train_images, train_labels, name, class_names),
          read_idx_split(test_images, test_labels, name, class_names)};
}

InMemorySplits load_cifar10(const fs::path& dir) {
  std::vector<fs::path> train;
  for (int i = 1; i <= 5; ++i) train.push_back(dir / fmt::format("data_batch_{}.bin", i));
  const std::vector<fs::path> test = {dir / "test_batch.bin"};
  auto all = train;
  all.insert(all.end(), test.begin(), test.end());
  require_files(all, "cifar10");
  return {read_cifar10_split(train), read_cifar10_split(test)};
}

}  // namespace

const std::vector<std::string>& known_dataset_names() {
  static const std::vector<std::string> names = {"mnist", "fashion-mnist", "cifar10"};
  return names;
}

KnownDataset known_dataset(const std::string& name) {
  if (name == "mnist" || name == "fashion-mnist") return {{1, 28, 28}, 10};
  if (name == "cifar10") return {{3, 32, 32}, 10};
  CONFLUX_INPUT_ERROR("unknown dataset '{}' (known: {})", name,
                      fmt::join(known_dataset_names(), ", "));
}

InMemorySplits load_dataset(const std::string& name, const std::filesystem::path& data_dir) {
  if (name == "mnist")
    return load_idx(name, dataset_dir(data_dir, "mnist", name), mnist_class_names());
  if (name == "fashion-mnist") {
    return load_idx(name, dataset_dir(data_dir, "fashion-mnist", name),
                    fashion_mnist_class_names());
  }
  if (name == "cifar10") return load_cifar10(dataset_dir(data_dir, "cifar-10", name));
  CONFLUX_INPUT_ERROR("unknown dataset '{}' (known: {})", name,
                      fmt::join(known_dataset_names(), ", "));
}

}  // namespace conflux::data
