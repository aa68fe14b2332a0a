#include "layers/multiply.h"

#include "layers/dense.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(Multiply, ElementwiseProductOfTwoAndThree) {
  layers::Multiply mul;
  const Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  const Tensor b = Tensor::from_vector(std::vector<float>{10, -20, 0.5f, 0}, {2, 2});
  const Tensor c = Tensor::from_vector(std::vector<float>{2, 2, -2, 5}, {2, 2});
  testing::expect_near(testing::run_layer(mul, {a, b})[0], {10, -40, 1.5f, 0});
  layers::Multiply mul3;
  testing::expect_near(testing::run_layer(mul3, {a, b, c})[0], {20, -80, -3, 0});
}

TEST(Multiply, Gradients) {
  layers::Multiply mul;
  testing::check_gradients(mul, {testing::random_tensor({2, 3, 4}, 1), testing::random_tensor({2, 3, 4}, 2)});
  layers::Multiply mul3;
  testing::check_gradients(mul3, {testing::random_tensor({3, 5}, 3), testing::random_tensor({3, 5}, 4),
                                  testing::random_tensor({3, 5}, 5)});
}

TEST(Multiply, ZerosInAnInputDoNotBreakTheOtherGradients) {
  // d(a*b*c)/da = b*c even where a = 0 (no division by the product).
  layers::Multiply mul;
  const Tensor zeros = Tensor::zeros({2, 3});
  testing::check_gradients(mul, {zeros, testing::random_tensor({2, 3}, 6), testing::random_tensor({2, 3}, 7)});
}

TEST(Multiply, GradientsThroughAWeightedBranch) {
  auto a = Input({3}), b = Input({4});
  Model model({a, b}, {layers::Multiply()(std::vector<SymbolicTensor>{a, layers::Dense({.units = 3})(b)})[0]});
  testing::GradCheckOptions o;
  o.check_inputs = false;
  testing::check_gradients(model, {testing::random_tensor({2, 3}, 8), testing::random_tensor({2, 4}, 9)}, o);
}

TEST(Multiply, ConfigRoundTrip) {
  layers::Multiply mul({.name = "prod"});
  testing::check_config_roundtrip(mul);
}

TEST(Multiply, MismatchNamesLayerAndShapes) {
  layers::Multiply mul({.name = "times"});
  try {
    mul(std::vector<SymbolicTensor>{Input({2, 2}), Input({2, 3})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'times' (Multiply)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[(None, 2, 2), (None, 2, 3)]"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tower
