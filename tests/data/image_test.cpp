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
