#include "layers/cropping2d.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(Cropping2D, NoCroppingByDefault) {
  layers::Cropping2D crop;
  EXPECT_EQ(crop(Input({2, 3, 4})).shape(), (Shape{-1, 2, 3, 4}));
}

TEST(Cropping2D, UnevenSidesAgainstANaiveLoop) {
  layers::Cropping2D crop({.cropping = Padding2D({1, 0}, {0, 2})});
  const Tensor x = testing::random_tensor({2, 4, 5, 2}, 1);
  const std::vector<float> v = x.to_vector();
  const int H = 4, W = 5, C = 2, OH = 3, OW = 3;
  std::vector<float> expected;
  for (int n = 0; n < 2; ++n)
    for (int oh = 0; oh < OH; ++oh)
      for (int ow = 0; ow < OW; ++ow)
        for (int c = 0; c < C; ++c) expected.push_back(v[static_cast<std::size_t>(((n * H + oh + 1) * W + ow) * C + c)]);
  const Tensor y = testing::run_layer(crop, {x})[0];
  EXPECT_EQ(y.shape(), (Shape{2, OH, OW, C}));
  testing::expect_near(y, expected, 0.f, 0.f);
}

TEST(Cropping2D, HandComputedSingleChannel) {
  // 3x3 image 1..9 cropped by 1 on every side leaves the middle 5.
  layers::Cropping2D crop({.cropping = 1});
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  testing::expect_near(testing::run_layer(crop, {x})[0], {5}, 0.f, 0.f);
}

TEST(Cropping2D, ChannelsFirstCropsTheLastTwoAxes) {
  layers::Cropping2D crop({.cropping = Padding2D(0, 1), .data_format = "channels_first"});
  // x[0, c, 0, :] = {1, 2, 3} and {4, 5, 6}: the middle column of each channel remains.
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {1, 2, 1, 3});
  const Tensor y = testing::run_layer(crop, {x})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 2, 1, 1}));
  testing::expect_near(y, {2, 5}, 0.f, 0.f);
}

TEST(Cropping2D, Gradients) {
  layers::Cropping2D crop({.cropping = Padding2D({1, 2}, {0, 1})});
  testing::check_gradients(crop, {testing::random_tensor({2, 5, 4, 3}, 2)});
  layers::Cropping2D cf({.cropping = 1, .data_format = "channels_first"});
  testing::check_gradients(cf, {testing::random_tensor({2, 2, 4, 3}, 3)});
}

TEST(Cropping2D, ConfigRoundTrip) {
  layers::Cropping2D crop({.cropping = Padding2D({1, 0}, {0, 2}), .name = "crop"});
  testing::check_config_roundtrip(crop);
  EXPECT_EQ(crop->get_config().at("cropping"), Config::parse_json("[[1, 0], [0, 2]]"));
}

TEST(Cropping2D, CroppingEverythingNamesLayerAndShape) {
  layers::Cropping2D crop({.cropping = Padding2D({2, 2}, {0, 0}), .name = "cr"});
  try {
    crop(Input({4, 6, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'cr'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 6, 3)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("((2, 2), (0, 0))"), std::string::npos) << msg;
  }
  layers::Cropping2D wide({.cropping = Padding2D(0, 3)});
  EXPECT_THROW(wide(Input({4, 6, 3})), ShapeError);
  layers::Cropping2D rank3;
  EXPECT_THROW(rank3(Input({4, 6})), ShapeError);
}

TEST(Cropping2D, RejectsNegativeCropping) {
  EXPECT_THROW(layers::Cropping2D({.cropping = -1}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
