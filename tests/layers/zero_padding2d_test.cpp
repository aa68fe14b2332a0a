#include "layers/zero_padding2d.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(ZeroPadding2D, OneEverywhereByDefault) {
  layers::ZeroPadding2D pad;
  EXPECT_EQ(pad(Input({2, 3, 4})).shape(), (Shape{-1, 4, 5, 4}));
  // A 1x1 single-channel image of 7 becomes a 3x3 image with 7 in the middle.
  layers::ZeroPadding2D pad1;
  const Tensor x = Tensor::from_vector(std::vector<float>{7}, {1, 1, 1, 1});
  testing::expect_near(testing::run_layer(pad1, {x})[0], {0, 0, 0, 0, 7, 0, 0, 0, 0}, 0.f, 0.f);
}

TEST(ZeroPadding2D, UnevenSidesAgainstANaiveLoop) {
  layers::ZeroPadding2D pad({.padding = Padding2D({1, 2}, {0, 1})});
  const Tensor x = testing::random_tensor({2, 3, 4, 2}, 1);
  const std::vector<float> v = x.to_vector();
  const int H = 3, W = 4, C = 2, OH = 6, OW = 5;
  std::vector<float> expected;
  for (int n = 0; n < 2; ++n)
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow)
        for (int c = 0; c < C; ++c) {
          const int h = oh - 1, w = ow;
          expected.push_back(h >= 0 && h < H && w < W ? v[static_cast<std::size_t>(((n * H + h) * W + w) * C + c)] : 0.f);
        }
  const Tensor y = testing::run_layer(pad, {x})[0];
  EXPECT_EQ(y.shape(), (Shape{2, OH, OW, C}));
  testing::expect_near(y, expected, 0.f, 0.f);
}

TEST(ZeroPadding2D, ChannelsFirstPadsTheLastTwoAxes) {
  layers::ZeroPadding2D pad({.padding = Padding2D(0, 1), .data_format = "channels_first"});
  EXPECT_EQ(pad(Input({2, 3, 4})).shape(), (Shape{-1, 2, 3, 6}));
  // Rows {1, 2} (channel 0) and {3, 4} (channel 1) each get a zero on the left and on the right.
  layers::ZeroPadding2D pad2({.padding = Padding2D(0, 1), .data_format = "channels_first"});
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 2, 1, 2});
  testing::expect_near(testing::run_layer(pad2, {x})[0], {0, 1, 2, 0, 0, 3, 4, 0}, 0.f, 0.f);
}

TEST(ZeroPadding2D, Gradients) {
  layers::ZeroPadding2D pad({.padding = Padding2D({2, 0}, {1, 3})});
  testing::check_gradients(pad, {testing::random_tensor({2, 3, 2, 3}, 2)});
  layers::ZeroPadding2D cf({.padding = 1, .data_format = "channels_first"});
  testing::check_gradients(cf, {testing::random_tensor({2, 3, 2, 3}, 3)});
}

TEST(ZeroPadding2D, ConfigRoundTrip) {
  layers::ZeroPadding2D pad({.padding = Padding2D({1, 2}, {3, 4}), .name = "pad"});
  testing::check_config_roundtrip(pad);
  EXPECT_EQ(pad->get_config().at("padding"), Config::parse_json("[[1, 2], [3, 4]]"));
  EXPECT_EQ(pad->get_config().at("data_format").as_string(), "channels_last");
}

TEST(ZeroPadding2D, NonImageInputNamesLayerAndShape) {
  layers::ZeroPadding2D pad({.name = "zp"});
  try {
    pad(Input({4, 4}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'zp'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 4)"), std::string::npos) << msg;
  }
}

TEST(ZeroPadding2D, RejectsNegativePaddingAndUnknownDataFormat) {
  EXPECT_THROW(layers::ZeroPadding2D({.padding = -1}), std::invalid_argument);
  EXPECT_THROW(layers::ZeroPadding2D({.data_format = "NCHW"}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
