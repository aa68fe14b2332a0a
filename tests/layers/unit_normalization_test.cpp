#include "layers/unit_normalization.h"

#include <cmath>
#include <string>

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(UnitNormalization, ScalesEachExampleToUnitNorm) {
  const Tensor x = Tensor::from_vector(std::vector<float>{3, 4, 0, -2}, {2, 2});
  testing::expect_near(testing::run_layer(layers::UnitNormalization(), {x})[0], {0.6f, 0.8f, 0.f, -1.f});
  // Over axes 1 and 2 of [1, 2, 2]: norm of (1, 1, 1, 1) is 2.
  const Tensor ones = Tensor::full({1, 2, 2}, 1.f);
  testing::expect_near(testing::run_layer(layers::UnitNormalization({.axis = {1, 2}}), {ones})[0],
                       {0.5f, 0.5f, 0.5f, 0.5f});
}

TEST(UnitNormalization, Gradients) {
  testing::check_gradients(layers::UnitNormalization(), {testing::random_tensor({2, 3, 4}, 1)});
  testing::check_gradients(layers::UnitNormalization({.axis = {1}}), {testing::random_tensor({2, 3, 4}, 2)});
}

TEST(UnitNormalization, ConfigRoundTrip) {
  layers::UnitNormalization un({.axis = {1, 2}, .name = "un"});
  testing::check_config_roundtrip(un);
  EXPECT_EQ(un->get_config().at("axis").to_json(), "[1, 2]");
  EXPECT_TRUE(un->weights().empty());
}

TEST(UnitNormalization, BadAxesNameTheLayer) {
  try {
    layers::UnitNormalization({.axis = {3}, .name = "un"})(Input({4, 5}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Layer 'un' (UnitNormalization): axis 3 is out of range"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 5)"), std::string::npos) << msg;
  }
  EXPECT_THROW(layers::UnitNormalization({.axis = {0}})(Input({4})), ShapeError);
  EXPECT_THROW(layers::UnitNormalization({.axis = {}}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
