// Weight digest and the HDF5 model file: round trip, attributes, mismatch errors.

#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "conflux/core/error.hpp"
#include "conflux/hdf5/file.hpp"
#include "conflux/hdf5/handle.hpp"
#include "conflux/model/model.hpp"
#include "conflux/model/model_io.hpp"

namespace conflux::model {
namespace {

namespace fs = std::filesystem;

const std::vector<LayerSpec> kSmall{
    {.type = "conv2d", .out = 4, .kernel = 3, .stride = 1, .padding = 1},
    {.type = "relu"},
    {.type = "maxpool", .kernel = 2, .stride = 0},
    {.type = "flatten"},
    {.type = "linear", .out = 5},
};

class ModelIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("conflux_model_io_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ModelIo, DigestIsSha256OfTheParameterBytes) {
  Model m(kSmall, {2, 6, 6}, 5, 1);
  const std::string d = weights_digest(m);
  EXPECT_EQ(d.size(), 64u);
  EXPECT_EQ(d.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(weights_digest(m), d);
  // One ulp in the last parameter changes it.
  float& last = m.params().back();
  last = std::nextafter(last, 1.0f);
  EXPECT_NE(weights_digest(m), d);
}

TEST_F(ModelIo, DigestOfKnownBytes) {
  // A model whose parameters we set by hand: the digest is SHA-256 over the float bytes in
  // buffer order (little-endian), i.e. exactly what sha256sum gives for the raw dump.
  Model m({{.type = "linear", .out = 1}}, {1}, 1, 1);
  ASSERT_EQ(m.params().size(), 2u);
  m.params()[0] = 0.0f;
  m.params()[1] = 0.0f;
  // sha256 of 8 zero bytes
  EXPECT_EQ(weights_digest(m), "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc");
}

TEST_F(ModelIo, SaveLoadRoundTrip) {
  Model a(kSmall, {2, 6, 6}, 5, 1);
  Model b(kSmall, {2, 6, 6}, 5, 2);
  ASSERT_NE(weights_digest(a), weights_digest(b));
  const fs::path file = dir_ / "model.h5";
  save_model_hdf5(file, a);
  EXPECT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(dir_ / "model.h5.tmp"));
  load_model_hdf5(file, b);
  EXPECT_EQ(weights_digest(b), weights_digest(a));
  EXPECT_TRUE(std::equal(a.params().begin(), a.params().end(), b.params().begin()));
  // Saving again over an existing file works (rename replaces it).
  save_model_hdf5(file, b);
  load_model_hdf5(file, a);
}

TEST_F(ModelIo, FileLayoutAndAttributes) {
  Model m(kSmall, {2, 6, 6}, 5, 3);
  const fs::path file = dir_ / "m.h5";
  save_model_hdf5(file, m);
  h5::silence_error_stack();
  const h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open");
  for (const ParamInfo& info : m.param_infos()) {
    const std::string name = "/params/" + info.name;
    const h5::Handle d(H5Dopen2(f.get(), name.c_str(), H5P_DEFAULT), "open dataset");
    const h5::Handle space(H5Dget_space(d.get()), "space");
    std::vector<hsize_t> dims(H5Sget_simple_extent_ndims(space.get()));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    EXPECT_EQ(std::vector<hsize_t>(info.shape.begin(), info.shape.end()), dims) << name;
    const h5::Handle type(H5Dget_type(d.get()), "type");
    EXPECT_TRUE(H5Tequal(type.get(), H5T_IEEE_F32LE) > 0) << name;
    std::vector<float> values(info.size);
    H5Dread(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    EXPECT_TRUE(std::equal(values.begin(), values.end(), m.params().begin() + info.offset));
  }
  {
    const h5::Handle attr(H5Aopen(f.get(), "digest", H5P_DEFAULT), "digest attribute");
    const h5::Handle type(H5Aget_type(attr.get()), "type");
    ASSERT_EQ(H5Tget_class(type.get()), H5T_STRING);
    char* text = nullptr;
    ASSERT_GE(H5Aread(attr.get(), type.get(), &text), 0);
    EXPECT_EQ(std::string(text), weights_digest(m));
    H5free_memory(text);
  }
  {
    // A 1-D fixed-length string dataset, readable by h5py as f["layers"][:].
    const h5::Handle set(H5Dopen2(f.get(), "layers", H5P_DEFAULT), "layers dataset");
    const h5::Handle type(H5Dget_type(set.get()), "type");
    ASSERT_EQ(H5Tget_class(type.get()), H5T_STRING);
    const h5::Handle space(H5Dget_space(set.get()), "space");
    ASSERT_EQ(H5Sget_simple_extent_npoints(space.get()), static_cast<hssize_t>(m.summary().size()));
    const std::size_t width = H5Tget_size(type.get());
    std::vector<char> text(width * m.summary().size());
    ASSERT_GE(H5Dread(set.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()), 0);
    EXPECT_EQ(std::string(text.data(), strnlen(text.data(), width)),
              "conv2d 2->4 k3 p1 : [4,6,6] (76 params)");
  }
}

std::string load_error(const fs::path& file, Model& m, const LoadOptions& options = {}) {
  try {
    load_model_hdf5(file, m, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// Over 5,000 layers once made saving fail after training ("could not create a string-array
// attribute": an HDF5 attribute holds at most 64 KB). The layer list is a dataset now.
TEST_F(ModelIo, SavesAModelOfThousandsOfLayers) {
  std::vector<LayerSpec> many{{.type = "flatten"}};
  for (int i = 0; i < 6000; ++i) many.push_back({.type = "relu"});
  many.push_back({.type = "linear", .out = 3});
  Model a(many, {1, 4, 4}, 3, 1);
  const fs::path file = dir_ / "many.h5";
  ASSERT_NO_THROW(save_model_hdf5(file, a));
  Model b(many, {1, 4, 4}, 3, 2);
  load_model_hdf5(file, b);
  EXPECT_EQ(weights_digest(b), weights_digest(a));
  const h5::File f = h5::File::open(file);
  EXPECT_EQ(f.read_strings("/layers").size(), many.size());
}

TEST_F(ModelIo, LoadIntoAnotherArchitectureFails) {
  Model a(kSmall, {2, 6, 6}, 5, 1);
  const fs::path file = dir_ / "a.h5";
  save_model_hdf5(file, a);

  std::vector<LayerSpec> wider = kSmall;
  wider[0].out = 6;
  Model b(wider, {2, 6, 6}, 5, 1);
  const std::string before = weights_digest(b);
  const std::string shape_error = load_error(file, b);
  EXPECT_NE(shape_error.find(file.string()), std::string::npos) << shape_error;
  EXPECT_NE(shape_error.find("layer0.conv2d.weight"), std::string::npos) << shape_error;
  EXPECT_NE(shape_error.find("[4,2,3,3]"), std::string::npos) << shape_error;
  EXPECT_EQ(weights_digest(b), before);  // untouched on failure

  Model mlp({{.type = "flatten"}, {.type = "linear", .out = 5}}, {2, 6, 6}, 5, 1);
  const std::string missing = load_error(file, mlp);
  EXPECT_NE(missing.find("layer1.linear.weight"), std::string::npos) << missing;
  EXPECT_NE(missing.find("missing"), std::string::npos) << missing;
}

TEST_F(ModelIo, LoadRejectsExtraTensors) {
  Model big({{.type = "linear", .out = 4}, {.type = "relu"}, {.type = "linear", .out = 4}}, {4}, 4,
            1);
  Model small({{.type = "linear", .out = 4}}, {4}, 4, 1);
  const fs::path file = dir_ / "big.h5";
  save_model_hdf5(file, big);
  EXPECT_THROW(load_model_hdf5(file, small), InputError);
}

TEST_F(ModelIo, SkipOutputLoadsAllButTheLastLayerForAnotherClassCount) {
  // Fine-tuning: a 5-class model's weights into a 3-class model of the same body.
  Model five(kSmall, {2, 6, 6}, 5, 1);
  std::vector<LayerSpec> three_spec = kSmall;
  three_spec.back().out = 3;
  Model three(three_spec, {2, 6, 6}, 3, 2);
  const fs::path file = dir_ / "five.h5";
  save_model_hdf5(file, five);
  EXPECT_THROW(load_model_hdf5(file, three), InputError);  // strict: the output layer differs

  const std::vector<float> own_init(three.params().begin(), three.params().end());
  const LoadReport report = load_model_hdf5(file, three, {.skip_output = true});
  EXPECT_EQ(report.loaded, 2u);  // the conv layer's weight and bias
  EXPECT_EQ(report.skipped,
            (std::vector<std::string>{"layer4.linear.weight", "layer4.linear.bias"}));
  for (const ParamInfo& info : three.param_infos()) {
    const bool output = info.name.starts_with("layer4.");
    for (std::size_t i = 0; i < info.size; ++i) {
      const float got = three.params()[info.offset + i];
      // The body comes from the file, the output layer keeps its own init.
      const float want = output ? own_init[info.offset + i] : five.params()[info.offset + i];
      ASSERT_EQ(got, want) << info.name << "[" << i << "]";
    }
  }
  // A body that differs is still an error, naming the tensor.
  Model other({{.type = "conv2d", .out = 6, .kernel = 3, .stride = 1, .padding = 1},
               {.type = "relu"},
               {.type = "maxpool", .kernel = 2, .stride = 0},
               {.type = "flatten"},
               {.type = "linear", .out = 3}},
              {2, 6, 6}, 3, 1);
  EXPECT_NE(load_error(file, other, {.skip_output = true}).find("layer0.conv2d.weight"),
            std::string::npos);
}

TEST_F(ModelIo, LoadRejectsMissingNonHdf5AndCorruptFiles) {
  Model m(kSmall, {2, 6, 6}, 5, 1);
  EXPECT_THROW(load_model_hdf5(dir_ / "nope.h5", m), InputError);
  const fs::path text = dir_ / "text.h5";
  std::ofstream(text) << "not hdf5";
  EXPECT_THROW(load_model_hdf5(text, m), InputError);

  // Change one stored weight behind the digest's back.
  const fs::path file = dir_ / "m.h5";
  save_model_hdf5(file, m);
  {
    const h5::Handle f(H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), "open");
    const h5::Handle d(H5Dopen2(f.get(), "/params/layer4.linear.bias", H5P_DEFAULT), "open");
    std::vector<float> bias(5, 0.25f);
    ASSERT_GE(H5Dwrite(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, bias.data()), 0);
  }
  const std::string error = load_error(file, m);
  EXPECT_NE(error.find("digest"), std::string::npos) << error;
}

TEST_F(ModelIo, SaveToMissingDirectoryFails) {
  Model m(kSmall, {2, 6, 6}, 5, 1);
  EXPECT_THROW(save_model_hdf5(dir_ / "no" / "such" / "dir.h5", m), Error);
}

}  // namespace
}  // namespace conflux::model
