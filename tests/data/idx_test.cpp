#include "api/data/idx.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>

#include "api/io/weights_file.h"  // io::crc32, for a hand-made gzip file
#include "testing/errors.h"

namespace tower::data {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(TOWER_TEST_DATA_DIR) / "data" / "idx";

// A fresh folder for one test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("tower_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// The fixture formula (tests/reference/make_data_fixtures.py).
int pixel(int image, int r, int c, int offset) { return (image * 31 + r * 7 + c * 3 + offset) % 256; }

void expect_fixture_images(const Tensor& x, int count, int offset) {
  ASSERT_EQ(x.dtype(), DType::uint8);
  ASSERT_EQ(x.shape(), (Shape{count, 28, 28}));
  const std::uint8_t* p = x.data<std::uint8_t>();
  for (int i = 0; i < count; ++i)
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) ASSERT_EQ(p[(i * 28 + r) * 28 + c], pixel(i, r, c, offset)) << i << "," << r << "," << c;
}

TEST(IdxTest, ReadsPlainAndGzippedFiles) {
  expect_fixture_images(idx::read((kFixtures / "train-images-idx3-ubyte").string()), 6, 0);
  expect_fixture_images(idx::read((kFixtures / "t10k-images-idx3-ubyte.gz").string()), 4, 100);
  const Tensor y = idx::read((kFixtures / "t10k-labels-idx1-ubyte.gz").string());
  ASSERT_EQ(y.shape(), (Shape{4}));
  EXPECT_EQ(y.data<std::uint8_t>()[3], (3 * 3 + 2) % 10);
}

TEST(IdxTest, DetectsGzipByContentNotByName) {
  TempDir dir;
  fs::copy_file(kFixtures / "t10k-images-idx3-ubyte.gz", dir / "compressed-but-plain-name");
  fs::copy_file(kFixtures / "train-images-idx3-ubyte", dir / "plain-but-named.gz");
  expect_fixture_images(idx::read((dir / "compressed-but-plain-name").string()), 4, 100);
  expect_fixture_images(idx::read((dir / "plain-but-named.gz").string()), 6, 0);
}

TEST(IdxTest, ConvertsOtherValueTypes) {
  const Tensor f = idx::read((kFixtures / "float32.idx").string());
  ASSERT_EQ(f.dtype(), DType::float32);
  ASSERT_EQ(f.shape(), (Shape{2, 3}));
  EXPECT_EQ(f.to_vector(), (std::vector<float>{0.5f, -1.25f, 3.f, 1e-3f, 100.f, -0.f}));
  const Tensor s = idx::read((kFixtures / "int16.idx").string());
  ASSERT_EQ(s.dtype(), DType::int32);
  ASSERT_EQ(s.shape(), (Shape{4}));
  const std::int32_t* p = s.data<std::int32_t>();
  EXPECT_EQ(std::vector<std::int32_t>(p, p + 4), (std::vector<std::int32_t>{-32768, -1, 0, 32767}));
}

TEST(IdxTest, MissingFileNamesThePath) {
  const std::string msg = testing::error_of([] { idx::read("/nonexistent/train-images-idx3-ubyte"); });
  EXPECT_HAS(msg, "/nonexistent/train-images-idx3-ubyte");
  EXPECT_HAS(msg, "not found");
}

TEST(IdxTest, TruncatedFileNamesThePathAndByteCounts) {
  TempDir dir;
  const std::string full = read_bytes(kFixtures / "train-images-idx3-ubyte");
  const fs::path cut = dir / "cut-idx3-ubyte";
  write_bytes(cut, full.substr(0, 16 + 100));
  std::string msg = testing::error_of([&] { idx::read(cut.string()); });
  EXPECT_HAS(msg, cut.string());
  EXPECT_HAS(msg, "truncated");
  EXPECT_HAS(msg, "4704");  // 6 * 28 * 28
  EXPECT_HAS(msg, " 100 ");

  write_bytes(cut, full.substr(0, 10));  // inside the dimensions
  msg = testing::error_of([&] { idx::read(cut.string()); });
  EXPECT_HAS(msg, "truncated");
  EXPECT_HAS(msg, "12 bytes");

  const std::string gz = read_bytes(kFixtures / "t10k-images-idx3-ubyte.gz");
  const fs::path cut_gz = dir / "cut.gz";
  write_bytes(cut_gz, gz.substr(0, gz.size() / 2));
  msg = testing::error_of([&] { idx::read(cut_gz.string()); });
  EXPECT_HAS(msg, cut_gz.string());
  EXPECT_HAS(msg, "truncated");
  EXPECT_HAS(msg, "3136");  // 4 * 28 * 28
}

TEST(IdxTest, WrongMagicOrTypeIsRejected) {
  TempDir dir;
  const fs::path png = dir / "image.png";
  write_bytes(png, std::string("\x89PNG\r\n\x1a\n", 8) + std::string(100, '\0'));
  std::string msg = testing::error_of([&] { idx::read(png.string()); });
  EXPECT_HAS(msg, png.string());
  EXPECT_HAS(msg, "not an IDX file");

  const fs::path bad_type = dir / "bad-type";
  write_bytes(bad_type, std::string("\0\0\x07\x01\0\0\0\x01\x05", 9));
  msg = testing::error_of([&] { idx::read(bad_type.string()); });
  EXPECT_HAS(msg, bad_type.string());
  EXPECT_HAS(msg, "0x07");
}

// A gzip file holding `data` in one stored (uncompressed) deflate block.
std::string gzip_stored(const std::string& data) {
  const auto le = [](std::uint32_t v, int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return out;
  };
  const auto n = static_cast<std::uint32_t>(data.size());
  return std::string("\x1f\x8b\x08\0\0\0\0\0\0\xff\x01", 11) + le(n, 2) + le(~n & 0xFFFF, 2) + data +
         le(io::crc32(data.data(), data.size()), 4) + le(n, 4);
}

// Found by fuzzing (tests/fuzz): the header's dimensions are checked against the file before anything is
// allocated for them, so a damaged header cannot ask for terabytes.
TEST(IdxTest, DimensionsLargerThanTheFileAreRejectedBeforeAllocating) {
  TempDir dir;
  // uint8 [100000, 100000, 100000]: 10^15 bytes announced, 3 present.
  const std::string header = std::string("\0\0\x08\x03", 4) + std::string("\0\x01\x86\xa0", 4) +
                             std::string("\0\x01\x86\xa0", 4) + std::string("\0\x01\x86\xa0", 4);
  const fs::path plain = dir / "huge-idx3-ubyte";
  write_bytes(plain, header + "abc");
  std::string msg = testing::error_of([&] { idx::read(plain.string()); });
  EXPECT_HAS(msg, plain.string());
  EXPECT_HAS(msg, "truncated");
  EXPECT_HAS(msg, "(100000, 100000, 100000)");
  EXPECT_HAS(msg, "1000000000000000 bytes");
  EXPECT_HAS(msg, "only 3 ");

  // Compressed, the same header is judged by what a gzip file of that size can hold (1032 bytes per byte).
  const fs::path gz = dir / "huge-idx3-ubyte.gz";
  write_bytes(gz, gzip_stored(header + "abc"));
  msg = testing::error_of([&] { idx::read(gz.string()); });
  EXPECT_HAS(msg, gz.string());
  EXPECT_HAS(msg, "more than a gzip file of");

  // Dimensions whose product overflows, and a huge shape with a zero dimension (empty, not an overflow).
  const fs::path overflow = dir / "overflow-idx3-ubyte";
  write_bytes(overflow, std::string("\0\0\x0e\x03", 4) + std::string(12, '\xff'));
  msg = testing::error_of([&] { idx::read(overflow.string()); });
  EXPECT_HAS(msg, overflow.string());
  EXPECT_HAS(msg, "(4294967295, 4294967295, 4294967295)");
  const fs::path empty = dir / "empty-idx3-ubyte";
  write_bytes(empty, std::string("\0\0\x08\x03", 4) + std::string(8, '\xff') + std::string(4, '\0'));
  const Tensor t = idx::read(empty.string());
  EXPECT_EQ(t.shape(), (Shape{4294967295, 4294967295, 0}));
  EXPECT_EQ(t.numel(), 0);
}

TEST(MnistTest, LoadsBothSplitsAsNormalisedImagesAndLabels) {
  const Dataset train = mnist::load("train", {.directory = kFixtures.string()});
  EXPECT_EQ(train.cardinality(), 6);
  int i = 0;
  for (const Element& e : train) {
    ASSERT_EQ(e.size(), 2u);
    ASSERT_EQ(e[0].shape(), (Shape{28, 28, 1}));
    ASSERT_EQ(e[0].dtype(), DType::float32);
    ASSERT_EQ(e[1].shape(), Shape{});
    ASSERT_EQ(e[1].dtype(), DType::int32);
    EXPECT_EQ(e[1].data<std::int32_t>()[0], (3 * i + 1) % 10);
    EXPECT_FLOAT_EQ(e[0].data<float>()[5 * 28 + 9], pixel(i, 5, 9, 0) / 255.f);
    ++i;
  }
  EXPECT_EQ(i, 6);

  const Dataset test = mnist::load("test", {.directory = kFixtures.string(), .normalize = false});
  EXPECT_EQ(test.cardinality(), 4);
  const Element first = *test.make_iterator()->next();
  EXPECT_EQ(first[0].data<float>()[27 * 28 + 27], static_cast<float>(pixel(0, 27, 27, 100)));
  EXPECT_EQ(first[1].data<std::int32_t>()[0], 2);
}

TEST(MnistTest, LoadDataReturnsTheRawArrays) {
  const RawData d = mnist::load_data(kFixtures.string());
  expect_fixture_images(d.x_train, 6, 0);
  expect_fixture_images(d.x_test, 4, 100);
  ASSERT_EQ(d.y_train.dtype(), DType::uint8);
  ASSERT_EQ(d.y_train.shape(), (Shape{6}));
  EXPECT_EQ(d.y_train.data<std::uint8_t>()[5], (3 * 5 + 1) % 10);
  ASSERT_EQ(d.y_test.shape(), (Shape{4}));
}

TEST(MnistTest, BadArgumentsAndFilesGiveClearErrors) {
  EXPECT_HAS(testing::error_of([] { mnist::load("train"); }), "directory");
  EXPECT_THROW(mnist::load("train"), std::invalid_argument);
  EXPECT_HAS(testing::error_of([] { mnist::load("validation", {.directory = kFixtures.string()}); }), "validation");

  TempDir dir;
  fs::copy_file(kFixtures / "train-images-idx3-ubyte", dir / "train-images-idx3-ubyte");
  std::string msg = testing::error_of([&] { mnist::load("train", {.directory = dir.path().string()}); });
  EXPECT_HAS(msg, (dir / "train-labels-idx1-ubyte").string());

  fs::copy_file(kFixtures / "t10k-labels-idx1-ubyte.gz", dir / "train-labels-idx1-ubyte.gz");
  msg = testing::error_of([&] { mnist::load("train", {.directory = dir.path().string()}); });
  EXPECT_HAS(msg, "6 images");
  EXPECT_HAS(msg, "4 labels");
  EXPECT_HAS(msg, (dir / "train-labels-idx1-ubyte.gz").string());
}

TEST(FashionMnistTest, MissingFileNamesTheDebianPackage) {
  const std::string msg = testing::error_of([] { fashion_mnist::load("test", {.directory = "/nonexistent/fmnist"}); });
  EXPECT_HAS(msg, "/nonexistent/fmnist/t10k-images-idx3-ubyte");
  EXPECT_HAS(msg, "dataset-fashion-mnist");
}

TEST(FashionMnistTest, ReadsTheInstalledTestSplit) {
  if (!fs::exists(fs::path(fashion_mnist::default_directory) / "t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Debian package dataset-fashion-mnist is not installed";
  const Dataset test = fashion_mnist::load("test");
  EXPECT_EQ(test.cardinality(), 10000);
  const std::vector<std::int32_t> expected_labels = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7, 4, 5};
  const Element batch = *test.batch(12).make_iterator()->next();
  const std::int32_t* labels = batch[1].data<std::int32_t>();
  EXPECT_EQ(std::vector<std::int32_t>(labels, labels + 12), expected_labels);
  const float* first = batch[0].data<float>();
  const double sum = std::accumulate(first, first + 784, 0.0);
  EXPECT_NEAR(sum * 255.0, 33456.0, 1e-2);  // pixel sum of the first test image (checked with Python)
  EXPECT_GE(*std::min_element(first, first + 784), 0.f);
  EXPECT_LE(*std::max_element(first, first + 784), 1.f);

  const RawData raw = fashion_mnist::load_data();
  EXPECT_EQ(raw.x_train.shape(), (Shape{60000, 28, 28}));
  EXPECT_EQ(raw.y_train.shape(), (Shape{60000}));
  EXPECT_EQ(raw.x_test.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(raw.y_train.data<std::uint8_t>()[0], 9);
  EXPECT_EQ(raw.y_test.data<std::uint8_t>()[1], 2);
}

}  // namespace
}  // namespace tower::data
