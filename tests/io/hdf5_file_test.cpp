#include "api/io/hdf5_file.h"
#include "api/io/hdf5_writer.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "api/io/weights_file.h"
#include "io/keras_weights_testing.h"
#include "testing/fixtures.h"
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
    io::Hdf5Writer f(path);
    io::Hdf5WriteGroup g = f.create_group("layers/dense/vars");
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


// tests/reference/make_hdf5_fixtures.py wrote every dataset as arange(n).reshape(shape) * scale + offset.
struct NumbersCase {
  std::string path;
  Shape shape;
  double scale, offset;
  bool chunked = false;
};

const std::vector<NumbersCase> kNumbers = {
    {"types/f4", {2, 3}, 0.5, -1.0},
    {"types/f4_big_endian", {2, 3}, 0.25, 3.0},
    {"types/f8", {4}, 1e-3, 0.5},
    {"types/f2", {3, 2}, 0.125, -0.5},
    {"types/i1", {5}, -3.0, 7.0},
    {"types/u2_big_endian", {2, 2}, 1000.0, 1.0},
    {"types/i4", {3}, -100000.0, 0.0},
    {"types/u8", {2}, 1.0, 1099511627776.0},
    {"layouts/scalar", Shape{}, 1.0, 42.0},
    {"layouts/empty", {0, 3}, 1.0, 0.0},
    {"layouts/compact", {2, 2}, 2.0, 1.0},
    {"layouts/chunked", {5, 7}, 1.0, 0.0, true},
    {"layouts/chunked_3d", {3, 4, 5}, 0.5, 0.0, true},
    {"layouts/gzip", {64, 9}, 0.25, -8.0, true},
    {"layouts/shuffle_gzip", {33}, 3.0, -50.0, true},
    {"layouts/chunk_larger_than_data", {3, 2}, 1.5, 0.0, true},
};

std::vector<float> expected_values(const NumbersCase& c) {
  std::vector<float> v(static_cast<std::size_t>(c.shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(double(i) * c.scale + c.offset);
  return v;
}

std::string hdf5_fixture(const std::string& name) { return (testing::reference_dir() / "hdf5" / name).string(); }

// The same tree written with h5py's default format (libver="earliest") and with libver="latest".
class Hdf5Formats : public ::testing::TestWithParam<std::string> {
 protected:
  bool latest() const { return GetParam() == "latest.h5"; }
  io::Hdf5File file() const { return io::Hdf5File::open(hdf5_fixture(GetParam())); }
};

TEST_P(Hdf5Formats, ReadsEveryNumberTypeAndLayout) {
  const io::Hdf5File f = file();
  for (const NumbersCase& c : kNumbers) {
    SCOPED_TRACE(c.path);
    ASSERT_TRUE(f.has_dataset(c.path));
    EXPECT_EQ(f.dataset_shape(c.path), c.shape);
    if (latest() && c.chunked) {
      // libver="latest" indexes chunks with the structures of data layout version 4.
      testing::expect_throws_mentioning<std::runtime_error>([&] { f.read_dataset(c.path); },
                                                            {GetParam(), c.path, "layout version 4"});
      continue;
    }
    EXPECT_EQ(f.read_dataset(c.path).to_vector(), expected_values(c));
  }
}

TEST_P(Hdf5Formats, ReadsStringAttributes) {
  const io::Hdf5Group g = file().group("strings");
  EXPECT_EQ(g.string_list_attribute("fixed"), (std::vector<std::string>{"conv1", "bn", "dense_1"}));
  EXPECT_EQ(g.string_list_attribute("vlen"), (std::vector<std::string>{"stem", "héad", ""}));
  EXPECT_EQ(g.string_attribute("vlen_scalar"), "tensorflow");
  EXPECT_EQ(g.string_attribute("fixed_scalar"), "2.15.0");
  EXPECT_TRUE(g.string_list_attribute("empty_list").empty());
  EXPECT_FALSE(g.has_attribute("nothing"));
  testing::expect_throws_mentioning<std::runtime_error>([&] { g.string_list_attribute("number"); },
                                                        {"attribute 'number' of '/strings'", "not a string"});
  testing::expect_throws_mentioning<std::runtime_error>([&] { g.string_attribute("vlen"); },
                                                        {"holds 3 strings, expected one"});
}

TEST_P(Hdf5Formats, FollowsSoftLinksAndRefusesExternalOnes) {
  const io::Hdf5File f = file();
  EXPECT_EQ(f.group("links").children(), (std::vector<std::string>{"dangling", "external", "soft"}));
  ASSERT_TRUE(f.has_dataset("links/soft"));
  EXPECT_EQ(f.read_dataset("links/soft").to_vector(), f.read_dataset("types/f4").to_vector());
  EXPECT_FALSE(f.has_dataset("links/dangling"));
  testing::expect_throws_mentioning<std::runtime_error>([&] { f.has_dataset("links/external"); },
                                                        {"'/links/external' is an external link"});
}

TEST_P(Hdf5Formats, GroupsInDenseStorageAndUnknownFiltersAreNamed) {
  const io::Hdf5File f = file();
  if (latest()) {
    testing::expect_throws_mentioning<std::runtime_error>([&] { f.group("many").children(); },
                                                          {"group '/many'", "dense storage"});
  } else {
    EXPECT_EQ(f.group("many").children().size(), 12u);
    testing::expect_throws_mentioning<std::runtime_error>([&] { f.read_dataset("filtered/fletcher32"); },
                                                          {"'/filtered/fletcher32'", "fletcher32"});
  }
}

INSTANTIATE_TEST_SUITE_P(, Hdf5Formats, ::testing::Values("earliest.h5", "latest.h5"),
                         [](const auto& info) { return info.param.substr(0, info.param.find('.')); });

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Reads everything a loader might, so that damage anywhere in the file is met (but the links and the
// filter Tower refuses).
void read_everything(const io::Hdf5Group& g, int depth) {
  for (const std::string& name : g.children()) {
    if (depth == 0 && (name == "links" || name == "filtered")) continue;
    for (const char* attribute : {"fixed", "vlen"})
      if (g.has_attribute(attribute)) g.string_list_attribute(attribute);
    if (g.has_dataset(name)) g.read_dataset(name);
    else if (g.has_group(name) && depth < 4) read_everything(g.group(name), depth + 1);
  }
}

TEST(Hdf5File, DamagedFilesGiveErrorsThatNameTheFile) {
  const std::string good = read_bytes(hdf5_fixture("earliest.h5"));
  testing::expect_throws_mentioning<std::runtime_error>([&] { io::Hdf5File::from_bytes("GIF89a", "x.h5"); },
                                                        {"x.h5", "not an HDF5 file"});
  // Cut short at many places: every read stays inside the bytes and ends in an error or, where nothing cut is
  // reached, in the right values.
  for (std::size_t size = 8; size < good.size(); size += 97) {
    SCOPED_TRACE(size);
    try {
      read_everything(io::Hdf5File::from_bytes(good.substr(0, size), "cut.h5"), 0);
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("HDF5 file 'cut.h5': "), std::string::npos) << e.what();
    }
  }
  // A group B-tree signature damaged.
  std::string damaged = good;
  const std::size_t tree = damaged.find("TREE", damaged.find("TREE") + 1);
  ASSERT_NE(tree, std::string::npos);
  damaged[tree] = 'X';
  testing::expect_throws_mentioning<std::runtime_error>(
      [&] { read_everything(io::Hdf5File::from_bytes(damaged, "damaged.h5"), 0); },
      {"damaged.h5", "no 'TREE' signature"});
}

}  // namespace
}  // namespace tower
