#include "layers/up_sampling1d.h"

#include <string>

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(UpSampling1D, RepeatsEachStep) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 2, 2});
  auto y = testing::run_layer(layers::UpSampling1D(), {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 4, 2}));
  testing::expect_near(y[0], {1, 2, 1, 2, 3, 4, 3, 4});
  y = testing::run_layer(layers::UpSampling1D({.size = 3}), {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 6, 2}));
}

TEST(UpSampling1D, Gradients) {
  testing::check_gradients(layers::UpSampling1D({.size = 3}), {testing::random_tensor({2, 3, 2}, 1)});
}

TEST(UpSampling1D, ConfigRoundTrip) {
  layers::UpSampling1D up({.size = 4, .name = "up"});
  testing::check_config_roundtrip(up);
  EXPECT_EQ(up->get_config().at("size").as_int(), 4);
}

TEST(UpSampling1D, WrongInputsNameTheLayerAndShapes) {
  try {
    layers::UpSampling1D({.name = "up"})(Input({4}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Layer 'up' (UpSampling1D): expects a 3-D input"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4)"), std::string::npos) << msg;
  }
  EXPECT_THROW(layers::UpSampling1D({.size = 0}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
