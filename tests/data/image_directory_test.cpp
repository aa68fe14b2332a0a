#include "api/data/image_directory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace tower::data {
namespace {

namespace fs = std::filesystem;

const fs::path kImages = fs::path(TOWER_TEST_DATA_DIR) / "data" / "images";

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

std::vector<Element> collect(const Dataset& ds) {
  std::vector<Element> out;
  for (const Element& e : ds) out.push_back(e);
  return out;
}

std::vector<std::string> relative(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) out.push_back(fs::relative(p, kImages).string());
  return out;
}

ImageDirectoryOptions unshuffled(std::array<Index, 2> size, Index batch_size = 0) {
  ImageDirectoryOptions o;
  o.image_size = size;
  o.batch_size = batch_size;
  o.shuffle = false;
  return o;
}

TEST(ImageDirectoryTest, ListsClassesAndFilesInKerasOrder) {
  const ImageDirectoryDataset d = image_dataset_from_directory(kImages.string(), unshuffled({6, 8}));
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"birds", "cats", "dogs"}));
  EXPECT_EQ(relative(d.file_paths), (std::vector<std::string>{"birds/b0.png", "birds/b1.bmp", "cats/c0.jpg",
                                                              "cats/c1.gif", "dogs/d0.png", "dogs/d1.png",
                                                              "dogs/more/d2.png"}));
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{0, 0, 1, 1, 2, 2, 2}));
  EXPECT_EQ(d.dataset.cardinality(), 7);

  const std::vector<Element> elements = collect(d.dataset);
  ASSERT_EQ(elements.size(), 7u);
  for (std::size_t i = 0; i < elements.size(); ++i) {
    ASSERT_EQ(elements[i][0].shape(), (Shape{6, 8, 3}));
    ASSERT_EQ(elements[i][1].shape(), Shape{});
    EXPECT_EQ(elements[i][1].data<std::int32_t>()[0], d.labels[i]);
  }
  // b0.png is already 6x8: decoded exactly, values 0..255.
  const float* b0 = elements[0][0].data<float>();
  EXPECT_EQ(b0[(5 * 8 + 7) * 3 + 0], 200);
  EXPECT_EQ(b0[(5 * 8 + 7) * 3 + 1], 210);
  EXPECT_EQ(b0[(5 * 8 + 7) * 3 + 2], 200 - 50 - 35);
  // The solid GIF stays solid after resizing; the grey PNG is replicated into RGB.
  for (float v : std::vector<float>{elements[3][0].to_vector()[0], elements[3][0].to_vector()[47 * 3]})
    EXPECT_EQ(v, 0);
  EXPECT_EQ(elements[3][0].to_vector()[47 * 3 + 2], 255);
  const float* d0 = elements[4][0].data<float>();
  EXPECT_EQ(d0[(3 * 8 + 5) * 3 + 0], 3 * 20 + 5 * 10);
  EXPECT_EQ(d0[(3 * 8 + 5) * 3 + 2], 3 * 20 + 5 * 10);
}

TEST(ImageDirectoryTest, BatchesResizedImages) {
  const ImageDirectoryDataset d = image_dataset_from_directory(kImages.string(), unshuffled({4, 5}, 3));
  EXPECT_EQ(d.dataset.cardinality(), 3);
  const std::vector<Element> batches = collect(d.dataset);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0][0].shape(), (Shape{3, 4, 5, 3}));
  EXPECT_EQ(batches[2][0].shape(), (Shape{1, 4, 5, 3}));
  EXPECT_EQ(batches[1][1].shape(), (Shape{3}));
  EXPECT_EQ(batches[1][1].data<std::int32_t>()[0], 1);
  EXPECT_EQ(batches[1][1].data<std::int32_t>()[2], 2);
  // d2.png (2x2 solid) upsampled stays (10, 20, 30).
  const std::vector<float> last = batches[2][0].to_vector();
  for (std::size_t i = 0; i < last.size(); i += 3) {
    EXPECT_FLOAT_EQ(last[i], 10);
    EXPECT_FLOAT_EQ(last[i + 2], 30);
  }
}

TEST(ImageDirectoryTest, ColorModes) {
  ImageDirectoryOptions o = unshuffled({6, 8});
  o.color_mode = "grayscale";
  const std::vector<Element> grey = collect(image_dataset_from_directory(kImages.string(), o).dataset);
  ASSERT_EQ(grey[4][0].shape(), (Shape{6, 8, 1}));
  EXPECT_EQ(grey[4][0].data<float>()[2 * 8 + 3], 2 * 20 + 3 * 10);

  o.color_mode = "rgba";
  o.image_size = {4, 4};
  const std::vector<Element> rgba = collect(image_dataset_from_directory(kImages.string(), o).dataset);
  ASSERT_EQ(rgba[5][0].shape(), (Shape{4, 4, 4}));
  const float* d1 = rgba[5][0].data<float>();
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(d1[(r * 4 + 1) * 4 + 0], 255);
    EXPECT_EQ(d1[(r * 4 + 1) * 4 + 3], 64 * r);
  }
  EXPECT_EQ(rgba[0][0].data<float>()[3], 255);  // an RGB file gets an opaque alpha

  o.color_mode = "cmyk";
  EXPECT_THROW(image_dataset_from_directory(kImages.string(), o), std::invalid_argument);
}

TEST(ImageDirectoryTest, LabelModesAndExplicitClassNames) {
  ImageDirectoryOptions o = unshuffled({2, 2});
  o.label_mode = "categorical";
  const std::vector<Element> onehot = collect(image_dataset_from_directory(kImages.string(), o).dataset);
  ASSERT_EQ(onehot[2][1].shape(), (Shape{3}));
  EXPECT_EQ(onehot[2][1].to_vector(), (std::vector<float>{0, 1, 0}));

  o.label_mode = "binary";
  o.class_names = {"dogs", "birds"};
  const ImageDirectoryDataset binary = image_dataset_from_directory(kImages.string(), o);
  EXPECT_EQ(binary.class_names, (std::vector<std::string>{"dogs", "birds"}));
  EXPECT_EQ(binary.labels, (std::vector<std::int32_t>{0, 0, 0, 1, 1}));
  const std::vector<Element> b = collect(binary.dataset);
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0][1].dtype(), DType::float32);
  EXPECT_EQ(b[0][1].shape(), (Shape{1}));  // Keras: labels [batch, 1] for a binary label_mode
  EXPECT_EQ(b[4][1].item(), 1.f);
  o.batch_size = 2;
  const std::vector<Element> batches = collect(image_dataset_from_directory(kImages.string(), o).dataset);
  EXPECT_EQ(batches[0][1].shape(), (Shape{2, 1}));

  o.class_names = {};
  EXPECT_HAS(error_of([&] { image_dataset_from_directory(kImages.string(), o); }), "2 classes");
  o.label_mode = "int";
  o.class_names = {"fish"};
  EXPECT_HAS(error_of([&] { image_dataset_from_directory(kImages.string(), o); }), "fish");
}

TEST(ImageDirectoryTest, SeededShuffleAndValidationSplit) {
  ImageDirectoryOptions o;
  o.image_size = {3, 3};
  o.batch_size = 0;
  o.seed = 1337;
  const ImageDirectoryDataset a = image_dataset_from_directory(kImages.string(), o);
  const ImageDirectoryDataset b = image_dataset_from_directory(kImages.string(), o);
  EXPECT_EQ(a.file_paths, b.file_paths);
  std::vector<std::int32_t> labels_a, labels_b;
  for (const Element& e : a.dataset) labels_a.push_back(e[1].data<std::int32_t>()[0]);
  for (const Element& e : b.dataset) labels_b.push_back(e[1].data<std::int32_t>()[0]);
  EXPECT_EQ(labels_a, labels_b);
  std::sort(labels_a.begin(), labels_a.end());
  EXPECT_EQ(labels_a, (std::vector<std::int32_t>{0, 0, 1, 1, 2, 2, 2}));

  o.validation_split = 0.3;
  o.subset = "training";
  const ImageDirectoryDataset training = image_dataset_from_directory(kImages.string(), o);
  o.subset = "validation";
  const ImageDirectoryDataset validation = image_dataset_from_directory(kImages.string(), o);
  EXPECT_EQ(training.file_paths.size(), 5u);  // 7 - int(0.3 * 7)
  EXPECT_EQ(validation.file_paths.size(), 2u);
  EXPECT_EQ(training.dataset.cardinality(), 5);
  std::set<std::string> all(training.file_paths.begin(), training.file_paths.end());
  all.insert(validation.file_paths.begin(), validation.file_paths.end());
  EXPECT_EQ(all.size(), 7u);

  o.seed.reset();
  EXPECT_THROW(image_dataset_from_directory(kImages.string(), o), std::invalid_argument);
  o.seed = 1;
  o.subset = "";
  EXPECT_THROW(image_dataset_from_directory(kImages.string(), o), std::invalid_argument);
  o.validation_split = 0;
  o.subset = "training";
  EXPECT_THROW(image_dataset_from_directory(kImages.string(), o), std::invalid_argument);
}

class ImageDirectoryErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tower_image_directory_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(ImageDirectoryErrorsTest, MissingEmptyOrImagelessDirectories) {
  EXPECT_HAS(error_of([&] { image_dataset_from_directory((dir_ / "nope").string()); }), (dir_ / "nope").string());
  std::string msg = error_of([&] { image_dataset_from_directory(dir_.string()); });
  EXPECT_HAS(msg, dir_.string());
  EXPECT_HAS(msg, "no sub-folders");
  fs::create_directories(dir_ / "empty_class");
  std::ofstream(dir_ / "empty_class" / "readme.txt") << "text";
  msg = error_of([&] { image_dataset_from_directory(dir_.string()); });
  EXPECT_HAS(msg, dir_.string());
  EXPECT_HAS(msg, "no images found");
  ImageDirectoryOptions o;
  o.labels = "none";
  EXPECT_THROW(image_dataset_from_directory(kImages.string(), o), std::invalid_argument);
}

// Files in sub-folders of a class folder, in the order keras.utils.image_dataset_from_directory (Keras 3.15)
// lists this tree: a folder's files by name, then its sub-folders, by path.
TEST_F(ImageDirectoryErrorsTest, FilesInSubFoldersInKerasOrder) {
  for (const char* f : {"a/z.png", "a/sub/y.png", "a/sub-x/k.png", "a/Sub/q.png", "a/m.jpg", "a/sub/a.png",
                        "b/B.png", "b/a.png"}) {
    fs::create_directories((dir_ / f).parent_path());
    fs::copy_file(kImages / "birds" / "b0.png", dir_ / f);
  }
  const ImageDirectoryDataset d = image_dataset_from_directory(dir_.string(), unshuffled({4, 4}));
  std::vector<std::string> files;
  for (const std::string& p : d.file_paths) files.push_back(fs::relative(p, dir_).string());
  EXPECT_EQ(files, (std::vector<std::string>{"a/m.jpg", "a/z.png", "a/Sub/q.png", "a/sub/a.png", "a/sub/y.png",
                                             "a/sub-x/k.png", "b/B.png", "b/a.png"}));
}

TEST_F(ImageDirectoryErrorsTest, CorruptImageFailsTheIterationNamingTheFile) {
  fs::create_directories(dir_ / "a");
  fs::copy_file(kImages / "birds" / "b0.png", dir_ / "a" / "good.png");
  std::ofstream(dir_ / "a" / "zz_bad.jpg") << "definitely not a JPEG";
  const ImageDirectoryDataset d = image_dataset_from_directory(dir_.string(), unshuffled({4, 4}, 2));
  auto it = d.dataset.make_iterator();
  const std::string msg = error_of([&] { it->next(); });
  EXPECT_HAS(msg, (dir_ / "a" / "zz_bad.jpg").string());
  EXPECT_HAS(msg, "cannot decode image");
}

}  // namespace
}  // namespace tower::data
