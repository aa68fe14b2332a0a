#include "layers/repeat_vector.h"

#include <string>

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(RepeatVector, RepeatsEachExample) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  const auto y = testing::run_layer(layers::RepeatVector({.n = 3}), {x});
  EXPECT_EQ(y[0].shape(), (Shape{2, 3, 2}));
  testing::expect_near(y[0], {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
}

TEST(RepeatVector, Gradients) {
  testing::check_gradients(layers::RepeatVector({.n = 4}), {testing::random_tensor({3, 5}, 1)});
}

TEST(RepeatVector, ConfigRoundTrip) {
  layers::RepeatVector rv({.n = 2, .name = "rv"});
  testing::check_config_roundtrip(rv);
  EXPECT_EQ(rv->get_config().at("n").as_int(), 2);
}

TEST(RepeatVector, WrongInputsNameTheLayerAndShapes) {
  try {
    layers::RepeatVector({.n = 2, .name = "rv"})(Input({3, 4}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Layer 'rv' (RepeatVector): expects a 2-D input"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 3, 4)"), std::string::npos) << msg;
  }
  EXPECT_THROW(layers::RepeatVector(), std::invalid_argument);  // n is required
}

}  // namespace
}  // namespace tower
