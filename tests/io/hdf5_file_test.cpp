#include "api/io/hdf5_file.h"

#include <unistd.h>

#include <filesystem>

#include "api/io/weights_file.h"
#include "io/keras_weights_testing.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

namespace fs = std::filesystem;

std::string temp_file(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tower_hdf5_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return (d / name).string();
}

TEST(Hdf5File, WrittenInMemoryAndReadBackFromDisk) {
  const std::string path = temp_file("tree.h5");
  {
    io::Hdf5File f = io::Hdf5File::create_in_memory(path);
    io::Hdf5Group g = f.create_group("layers/dense/vars");
    g.set_string_attribute("name", "dense_é");
    g.write_dataset("0", Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}));
    g.write_dataset("1", Tensor::from_vector(std::vector<float>{-0.5f}, Shape{}));
    f.create_group("b");
    io::write_file_atomically(path, f.image());
  }
  const io::Hdf5File f = io::Hdf5File::open(path);
  EXPECT_EQ(f.children(), (std::vector<std::string>{"b", "layers"}));
  EXPECT_TRUE(f.has_group("layers/dense"));
  EXPECT_FALSE(f.has_group("layers/dense/vars/0"));
  EXPECT_TRUE(f.has_dataset("layers/dense/vars/0"));
  EXPECT_FALSE(f.has_dataset("layers/conv2d/vars/0"));
  const io::Hdf5Group g = f.group("layers/dense/vars");
  EXPECT_EQ(g.path(), "/layers/dense/vars");
  EXPECT_EQ(g.string_attribute("name"), "dense_é");
  EXPECT_EQ(g.dataset_shape("0"), (Shape{2, 3}));
  EXPECT_EQ(g.read_dataset("0").to_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(g.dataset_shape("1"), Shape{});
  EXPECT_EQ(g.read_dataset("1").to_vector(), std::vector<float>{-0.5f});
}

TEST(Hdf5File, ReadsKerasStringAttributes) {
  // Keras 3 writes variable-length strings, Keras 2 fixed-length byte strings; an empty list is an empty
  // float64 array.
  const io::Hdf5File keras3 = io::Hdf5File::open(testing::keras_weights_fixture("convnet.h5"));
  const io::Hdf5File keras2 = io::Hdf5File::open(testing::keras_weights_fixture("convnet_keras2.h5"));
  const std::vector<std::string> layers = keras3.string_list_attribute("layer_names");
  ASSERT_EQ(layers.size(), 12u);
  EXPECT_EQ(layers[1], "stem");
  EXPECT_EQ(keras2.string_list_attribute("layer_names"), layers);
  EXPECT_EQ(keras3.group("dw").string_list_attribute("weight_names"),
            (std::vector<std::string>{"dw/kernel", "dw/bias"}));
  EXPECT_EQ(keras2.group("dw").string_list_attribute("weight_names"),
            (std::vector<std::string>{"dw/depthwise_kernel:0", "dw/bias:0"}));
  EXPECT_TRUE(keras3.group("pool").string_list_attribute("weight_names").empty());
  EXPECT_TRUE(keras2.group("pool").string_list_attribute("weight_names").empty());
  EXPECT_EQ(keras3.string_attribute("backend"), "tensorflow");
}

TEST(Hdf5File, ErrorsNameTheFileAndThePath) {
  const std::string path = testing::keras_weights_fixture("convnet.weights.h5");
  const io::Hdf5File f = io::Hdf5File::open(path);
  testing::expect_throws_mentioning<std::runtime_error>([&] { f.group("layers/nope"); },
                                                        {path, "no group '/layers/nope'"});
  testing::expect_throws_mentioning<std::runtime_error>([&] { f.group("layers").read_dataset("dense"); },
                                                        {path, "no dataset '/layers/dense'"});
  testing::expect_throws_mentioning<std::runtime_error>([&] { f.string_attribute("name"); },
                                                        {path, "no attribute 'name' of '/'"});
  testing::expect_throws_mentioning<std::runtime_error>([&] { io::Hdf5File::open(temp_file("none.h5")); },
                                                        {"none.h5", "No such file"});
}

}  // namespace
}  // namespace tower
