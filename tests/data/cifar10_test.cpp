#include "api/data/cifar10.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tower::data {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(TOWER_TEST_DATA_DIR) / "data" / "cifar10";

// The fixture formula (tests/reference/make_data_fixtures.py): record k, channel ch, row r, column c.
int pixel(int k, int ch, int r, int c) { return (k * 13 + ch * 50 + r * 3 + c) % 256; }

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

class CifarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("tower_cifar_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // A copy of the fixtures whose `file` keeps only its first `bytes` bytes.
  void copy_truncating(const std::string& file, std::size_t bytes) {
    for (const auto& entry : fs::directory_iterator(kFixtures)) fs::copy_file(entry.path(), dir_ / entry.path().filename());
    fs::resize_file(dir_ / file, bytes);
  }
  fs::path dir_;
};

TEST_F(CifarTest, LoadsTrainBatchesInOrderAsChannelsLastImages) {
  const Dataset train = cifar10::load(kFixtures.string(), "train");
  EXPECT_EQ(train.cardinality(), 10);
  int k = 0;
  for (const Element& e : train) {
    ASSERT_EQ(e[0].shape(), (Shape{32, 32, 3}));
    ASSERT_EQ(e[0].dtype(), DType::float32);
    ASSERT_EQ(e[1].shape(), Shape{});
    EXPECT_EQ(e[1].data<std::int32_t>()[0], k % 10);
    const float* p = e[0].data<float>();
    for (int r : {0, 7, 31})
      for (int c : {0, 19, 31})
        for (int ch = 0; ch < 3; ++ch)
          EXPECT_FLOAT_EQ(p[(r * 32 + c) * 3 + ch], pixel(k, ch, r, c) / 255.f) << k << " " << r << " " << c;
    ++k;
  }
  EXPECT_EQ(k, 10);
}

TEST_F(CifarTest, TestSplitAndRawData) {
  const Element first = *cifar10::load(kFixtures.string(), "test", false).make_iterator()->next();
  EXPECT_EQ(first[0].data<float>()[(2 * 32 + 5) * 3 + 1], static_cast<float>(pixel(100, 1, 2, 5)));
  EXPECT_EQ(first[1].data<std::int32_t>()[0], 0);

  const RawData raw = cifar10::load_data(kFixtures.string());
  ASSERT_EQ(raw.x_train.shape(), (Shape{10, 32, 32, 3}));
  ASSERT_EQ(raw.x_train.dtype(), DType::uint8);
  ASSERT_EQ(raw.y_test.shape(), (Shape{3}));
  EXPECT_EQ(raw.y_test.data<std::uint8_t>()[2], 2);
  EXPECT_EQ(raw.x_test.data<std::uint8_t>()[((2 * 32 + 31) * 32 + 4) * 3 + 2], pixel(102, 2, 31, 4));
  EXPECT_EQ(cifar10::class_names().at(9), "truck");
}

TEST_F(CifarTest, FindsTheArchivesSubFolder) {
  fs::create_directories(dir_ / "cifar-10-batches-bin");
  for (const auto& entry : fs::directory_iterator(kFixtures))
    fs::copy_file(entry.path(), dir_ / "cifar-10-batches-bin" / entry.path().filename());
  EXPECT_EQ(cifar10::load(dir_.string(), "test").cardinality(), 3);
}

TEST_F(CifarTest, MissingFileIsNamed) {
  copy_truncating("test_batch.bin", 3073);
  fs::remove(dir_ / "data_batch_4.bin");
  const std::string msg = error_of([&] { cifar10::load(dir_.string(), "train"); });
  EXPECT_HAS(msg, (dir_ / "data_batch_4.bin").string());
  EXPECT_HAS(msg, "not found");
  EXPECT_EQ(cifar10::load(dir_.string(), "test").cardinality(), 1);
}

TEST_F(CifarTest, TruncatedFileIsNamedWithItsSize) {
  copy_truncating("data_batch_2.bin", 3073 + 1000);
  const std::string msg = error_of([&] { cifar10::load(dir_.string(), "train"); });
  EXPECT_HAS(msg, (dir_ / "data_batch_2.bin").string());
  EXPECT_HAS(msg, "4073 bytes");
  EXPECT_HAS(msg, "3073");
}

TEST_F(CifarTest, BadLabelAndSplitAreRejected) {
  copy_truncating("test_batch.bin", 3 * 3073);
  {
    std::fstream f(dir_ / "test_batch.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3073);
    f.put(static_cast<char>(42));
  }
  const std::string msg = error_of([&] { cifar10::load(dir_.string(), "test"); });
  EXPECT_HAS(msg, (dir_ / "test_batch.bin").string());
  EXPECT_HAS(msg, "record 1");
  EXPECT_HAS(msg, "42");
  EXPECT_THROW(cifar10::load(kFixtures.string(), "validation"), std::invalid_argument);
}

}  // namespace
}  // namespace tower::data
