#include "layers/up_sampling2d.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(UpSampling2D, TwoByDefault) {
  layers::UpSampling2D up;
  EXPECT_EQ(up(Input({3, 4, 5})).shape(), (Shape{-1, 6, 8, 5}));
  layers::UpSampling2D up1;
  // [[1, 2], [3, 4]] -> each value repeated in a 2x2 block.
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 2, 2, 1});
  testing::expect_near(testing::run_layer(up1, {x})[0], {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 0.f, 0.f);
}

TEST(UpSampling2D, NonSquareFactorsAgainstANaiveLoop) {
  layers::UpSampling2D up({.size = {2, 3}});
  const Tensor x = testing::random_tensor({2, 2, 2, 3}, 1);
  const std::vector<float> v = x.to_vector();
  std::vector<float> expected;
  for (int n = 0; n < 2; ++n)
    for (int oh = 0; oh < 4; ++oh)
      for (int ow = 0; ow < 6; ++ow)
        for (int c = 0; c < 3; ++c) expected.push_back(v[static_cast<std::size_t>(((n * 2 + oh / 2) * 2 + ow / 3) * 3 + c)]);
  const Tensor y = testing::run_layer(up, {x})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 4, 6, 3}));
  testing::expect_near(y, expected, 0.f, 0.f);
}

TEST(UpSampling2D, ChannelsFirst) {
  layers::UpSampling2D up({.size = {1, 2}, .data_format = "channels_first"});
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 2, 1, 2});
  const Tensor y = testing::run_layer(up, {x})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 2, 1, 4}));
  testing::expect_near(y, {1, 1, 2, 2, 3, 3, 4, 4}, 0.f, 0.f);
}

TEST(UpSampling2D, Gradients) {
  layers::UpSampling2D up({.size = {2, 3}});
  testing::check_gradients(up, {testing::random_tensor({2, 3, 2, 2}, 2)});
  layers::UpSampling2D cf({.size = 2, .data_format = "channels_first"});
  testing::check_gradients(cf, {testing::random_tensor({2, 2, 3, 2}, 3)});
}

TEST(UpSampling2D, ConfigRoundTrip) {
  layers::UpSampling2D up({.size = {2, 3}, .name = "up"});
  testing::check_config_roundtrip(up);
  const Config c = up->get_config();
  EXPECT_EQ(c.at("size"), Config::parse_json("[2, 3]"));
  EXPECT_EQ(c.at("interpolation").as_string(), "nearest");
  EXPECT_EQ(c.at("data_format").as_string(), "channels_last");
}

TEST(UpSampling2D, BilinearIsNotSupported) {
  try {
    layers::UpSampling2D up({.interpolation = "bilinear"});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bilinear"), std::string::npos) << msg;
    EXPECT_NE(msg.find("only 'nearest'"), std::string::npos) << msg;
  }
  EXPECT_THROW(layers::UpSampling2D({.size = 0}), std::invalid_argument);
}

TEST(UpSampling2D, NonImageInputNamesLayerAndShape) {
  layers::UpSampling2D up({.name = "us"});
  try {
    up(Input({4, 4}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'us'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 4)"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tower
