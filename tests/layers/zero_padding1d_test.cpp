#include "layers/zero_padding1d.h"

#include <string>

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(ZeroPadding1D, PadsTheSteps) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 2, 2});
  auto y = testing::run_layer(layers::ZeroPadding1D(), {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 4, 2}));
  testing::expect_near(y[0], {0, 0, 1, 2, 3, 4, 0, 0});
  y = testing::run_layer(layers::ZeroPadding1D({.padding = {2, 0}}), {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 4, 2}));
  testing::expect_near(y[0], {0, 0, 0, 0, 1, 2, 3, 4});
}

TEST(ZeroPadding1D, ChannelsFirstPadsTheLastAxis) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 2, 2});
  auto y = testing::run_layer(layers::ZeroPadding1D({.padding = {1, 0}, .data_format = "channels_first"}), {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 3}));
  testing::expect_near(y[0], {0, 1, 2, 0, 3, 4});
}

TEST(ZeroPadding1D, Gradients) {
  testing::check_gradients(layers::ZeroPadding1D({.padding = {1, 3}}), {testing::random_tensor({2, 3, 2}, 1)});
  testing::check_gradients(layers::ZeroPadding1D({.padding = 2, .data_format = "channels_first"}),
                           {testing::random_tensor({2, 3, 4}, 2)});
}

TEST(ZeroPadding1D, ConfigRoundTrip) {
  layers::ZeroPadding1D pad({.padding = {1, 2}, .name = "zp"});
  testing::check_config_roundtrip(pad);
  EXPECT_EQ(pad->get_config().at("padding").to_json(), "[1, 2]");
}

TEST(ZeroPadding1D, WrongInputsNameTheLayerAndShapes) {
  try {
    layers::ZeroPadding1D({.name = "zp"})(Input({2, 2, 2}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Layer 'zp' (ZeroPadding1D): expects a 3-D input"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 2, 2, 2)"), std::string::npos) << msg;
  }
  EXPECT_THROW(layers::ZeroPadding1D({.padding = {-1, 0}}), std::invalid_argument);
  EXPECT_THROW(layers::ZeroPadding1D({.data_format = "nwc"}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
