#include "layers/cropping1d.h"

#include <string>

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(Cropping1D, CropsTheSteps) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {1, 4, 2});
  auto y = testing::run_layer(layers::Cropping1D(), {x});  // (1, 1)
  EXPECT_EQ(y[0].shape(), (Shape{1, 2, 2}));
  testing::expect_near(y[0], {3, 4, 5, 6});
  y = testing::run_layer(layers::Cropping1D({.cropping = {0, 3}}), {x});
  EXPECT_EQ(y[0].shape(), (Shape{1, 1, 2}));
  testing::expect_near(y[0], {1, 2});
}

TEST(Cropping1D, Gradients) {
  testing::check_gradients(layers::Cropping1D({.cropping = {2, 1}}), {testing::random_tensor({2, 6, 3}, 1)});
}

TEST(Cropping1D, ConfigRoundTrip) {
  layers::Cropping1D crop({.cropping = {2, 0}, .name = "crop"});
  testing::check_config_roundtrip(crop);
  EXPECT_EQ(crop->get_config().at("cropping").to_json(), "[2, 0]");
}

TEST(Cropping1D, WrongInputsNameTheLayerAndShapes) {
  try {
    layers::Cropping1D({.cropping = {2, 2}, .name = "crop"})(Input({4, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Layer 'crop' (Cropping1D): cropping (2, 2) removes 4 of the 4 steps"), std::string::npos)
        << msg;
  }
  EXPECT_THROW(layers::Cropping1D()(Input({4})), ShapeError);
  EXPECT_THROW(layers::Cropping1D({.cropping = -1}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
