#include "api/data/image.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

Tensor image(const std::vector<float>& values, Index h, Index w, Index c = 1) {
  return Tensor::from_vector(values, Shape{h, w, c});
}

TEST(ImageDecodeTest, DecodesPngAndBmpExactly) {
  const Tensor png = decode_image((kImages / "birds" / "b0.png").string(), 3);
  ASSERT_EQ(png.shape(), (Shape{6, 8, 3}));
  const float* p = png.data<float>();
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 8; ++c) {
      EXPECT_EQ(p[(r * 8 + c) * 3 + 0], r * 40);
      EXPECT_EQ(p[(r * 8 + c) * 3 + 1], c * 30);
      EXPECT_EQ(p[(r * 8 + c) * 3 + 2], 200 - r * 10 - c * 5);
    }
  const Tensor bmp = decode_image((kImages / "birds" / "b1.bmp").string(), 4);
  ASSERT_EQ(bmp.shape(), (Shape{5, 5, 4}));
  const float* b = bmp.data<float>();
  EXPECT_EQ(b[(3 * 5 + 2) * 4 + 0], 30);
  EXPECT_EQ(b[(3 * 5 + 2) * 4 + 1], 20);
  EXPECT_EQ(b[(3 * 5 + 2) * 4 + 2], 77);
  EXPECT_EQ(b[(3 * 5 + 2) * 4 + 3], 255);  // opaque alpha added
}

TEST(ImageDecodeTest, DecodesJpegAndGif) {
  const Tensor jpg = decode_image((kImages / "cats" / "c0.jpg").string(), 3);
  ASSERT_EQ(jpg.shape(), (Shape{8, 8, 3}));
  const std::vector<float> v = jpg.to_vector();
  for (std::size_t i = 0; i < v.size(); i += 3) {
    EXPECT_NEAR(v[i], 200, 3);
    EXPECT_NEAR(v[i + 1], 40, 3);
    EXPECT_NEAR(v[i + 2], 40, 3);
  }
  const Tensor gif = decode_image((kImages / "cats" / "c1.gif").string(), 3);
  ASSERT_EQ(gif.shape(), (Shape{4, 4, 3}));
  EXPECT_EQ(gif.to_vector()[0], 0);
  EXPECT_EQ(gif.to_vector()[1], 128);
  EXPECT_EQ(gif.to_vector()[2], 255);
}

TEST(ImageDecodeTest, ErrorsNameTheFile) {
  const fs::path dir = fs::temp_directory_path() / ("tower_image_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path corrupt = dir / "corrupt.png";
  std::ofstream(corrupt) << "this is not a PNG";
  std::string msg = error_of([&] { decode_image(corrupt.string(), 3); });
  EXPECT_HAS(msg, corrupt.string());
  EXPECT_HAS(msg, "cannot decode image");
  EXPECT_GT(msg.size(), std::string("cannot decode image " + corrupt.string() + ": ").size() + 5);
  const fs::path empty = dir / "empty.jpg";
  std::ofstream{empty};
  msg = error_of([&] { decode_image(empty.string(), 3); });
  EXPECT_HAS(msg, empty.string());
  EXPECT_HAS(msg, "empty");
  fs::remove_all(dir);

  EXPECT_HAS(error_of([] { decode_image("/nonexistent/x.png", 3); }), "/nonexistent/x.png");
  EXPECT_THROW(decode_image((kImages / "birds" / "b0.png").string(), 2), std::invalid_argument);
}

// Found by fuzzing (tests/fuzz): a GIF header announcing 16163 x 16722 pixels made stb_image allocate 3 GiB
// before it found the data missing. decode_image reads the size first and refuses more than kMaxImagePixels.
TEST(ImageDecodeTest, ImagesLargerThanTheLimitAreRefusedBeforeDecoding) {
  const fs::path dir = fs::temp_directory_path() / ("tower_image_limit_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path gif = dir / "huge.gif";
  std::ofstream(gif, std::ios::binary) << std::string("GIF87a\x23\x3f\x52\x41\x80\0\0", 13) << std::string(20, '\0');
  std::string msg = error_of([&] { decode_image(gif.string(), 3); });
  EXPECT_HAS(msg, gif.string());
  EXPECT_HAS(msg, "16163x16722 pixels");
  EXPECT_HAS(msg, std::to_string(kMaxImagePixels));
  // PNG: only the IHDR chunk, 6000 x 6000 RGB (36 million pixels).
  const fs::path png = dir / "huge.png";
  std::ofstream(png, std::ios::binary) << std::string("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\x17\x70\0\0\x17\x70\x08\x02\0\0\0", 29)
                                       << std::string(4, '\0');
  msg = error_of([&] { decode_image(png.string(), 1); });
  EXPECT_HAS(msg, png.string());
  EXPECT_HAS(msg, "6000x6000 pixels");
  fs::remove_all(dir);
}

// Found by fuzzing (tests/fuzz): a JPEG Huffman table of more than 256 codes overflowed a heap array inside
// Debian's stb_image 2.27. decode_image checks every table before stb_image sees the file.
TEST(ImageDecodeTest, JpegHuffmanTablesLargerThanTheFormatAllowsAreRefused) {
  const fs::path dir = fs::temp_directory_path() / ("tower_image_dht_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // SOI, then a DHT segment announcing 16 x 255 = 4080 codes in one table, then EOI; stb_image also takes a
  // JPEG whose SOI follows fill bytes.
  for (const std::string soi : {std::string("\xff\xd8"), std::string("\xff\xff\xff\xd8")}) {
    std::string jpeg = soi + std::string("\xff\xc4\x10\x03\x00", 5) + std::string(16, '\xff');
    jpeg += std::string(4080, '\x01') + "\xff\xd9";
    const fs::path path = dir / "bad_dht.jpg";
    std::ofstream(path, std::ios::binary) << jpeg;
    const std::string msg = error_of([&] { decode_image(path.string(), 3); });
    EXPECT_HAS(msg, path.string());
    EXPECT_HAS(msg, "Huffman table (DHT) holds 4080 codes");
  }
  fs::remove_all(dir);
  // A real JPEG still decodes.
  EXPECT_EQ(decode_image((kImages / "cats" / "c0.jpg").string(), 3).rank(), 3);
}

// Found by fuzzing (tests/fuzz): Debian's stb_image 2.27 read past a heap buffer converting a 16-bit PPM. Only
// the formats of decode_image's contract reach stb_image; the others are refused by their first bytes.
TEST(ImageDecodeTest, FormatsOutsidePngJpegBmpAndGifAreRefused) {
  const fs::path dir = fs::temp_directory_path() / ("tower_image_formats_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> others = {
      {"deep.ppm", std::string("P6\n3 2\n275\n", 11) + std::string(36, '\x01')},
      {"gray.pgm", std::string("P5\n1 1\n255\n\x07", 12)},
      {"flat.hdr", "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 1\n\x01\x01\x01\x80"},
      {"raw.tga", std::string("\0\0\x02\0\0\0\0\0\0\0\0\0\x01\0\x01\0\x18\0\x01\x02\x03", 21)}};
  for (const auto& [name, bytes] : others) {
    const fs::path path = dir / name;
    std::ofstream(path, std::ios::binary) << bytes;
    const std::string msg = error_of([&] { decode_image(path.string(), 3); });
    EXPECT_HAS(msg, path.string());
    EXPECT_HAS(msg, "not a PNG, JPEG, BMP or GIF file");
  }
  fs::remove_all(dir);
}

TEST(ImageResizeTest, MatchesTfHalfPixelBilinear) {
  EXPECT_EQ(resize_bilinear(image({0, 100}, 1, 2), 1, 4).to_vector(), (std::vector<float>{0, 25, 75, 100}));
  EXPECT_EQ(resize_bilinear(image({0, 1, 2, 3}, 1, 4), 1, 2).to_vector(), (std::vector<float>{0.5f, 2.5f}));
  // Separable: value = 10 * column weight + 20 * row weight, weights {0, .25, .75, 1} when doubling.
  const Tensor up = resize_bilinear(image({0, 10, 20, 30}, 2, 2), 4, 4);
  ASSERT_EQ(up.shape(), (Shape{4, 4, 1}));
  const float w[4] = {0.f, .25f, .75f, 1.f};
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(up.to_vector()[y * 4 + x], 10 * w[x] + 20 * w[y]) << y << "," << x;
}

TEST(ImageResizeTest, KeepsConstantsAndChannels) {
  Tensor rgb(Shape{5, 7, 3});
  for (Index i = 0; i < 35; ++i) {
    rgb.data<float>()[i * 3 + 0] = 1.f;
    rgb.data<float>()[i * 3 + 1] = 2.f;
    rgb.data<float>()[i * 3 + 2] = 3.f;
  }
  const Tensor out = resize_bilinear(rgb, 3, 11);
  ASSERT_EQ(out.shape(), (Shape{3, 11, 3}));
  const std::vector<float> v = out.to_vector();
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_FLOAT_EQ(v[i], static_cast<float>(i % 3 + 1));
  EXPECT_TRUE(resize_bilinear(rgb, 5, 7).same_storage(rgb));
  EXPECT_THROW(resize_bilinear(Tensor::zeros(Shape{4, 4}), 2, 2), std::invalid_argument);
  EXPECT_THROW(resize_bilinear(rgb, 0, 2), std::invalid_argument);
}

}  // namespace
}  // namespace tower::data
