#include "layers/subtract.h"

#include "layers/dense.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(Subtract, FirstMinusSecond) {
  layers::Subtract sub;
  const Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  const Tensor b = Tensor::from_vector(std::vector<float>{10, -20, 0.5f, 4}, {2, 2});
  testing::expect_near(testing::run_layer(sub, {a, b})[0], {-9, 22, 2.5f, 0});
}

TEST(Subtract, Gradients) {
  layers::Subtract sub;
  testing::check_gradients(sub, {testing::random_tensor({2, 3, 4}, 1), testing::random_tensor({2, 3, 4}, 2)});
}

TEST(Subtract, GradientOfOnlyTheSecondInput) {
  // The first input needs no gradient (a model input without input gradients): only -dy flows to the Dense.
  auto a = Input({3}), b = Input({4});
  Model model({a, b}, {layers::Subtract()(std::vector<SymbolicTensor>{a, layers::Dense({.units = 3})(b)})[0]});
  testing::GradCheckOptions o;
  o.check_inputs = false;
  testing::check_gradients(model, {testing::random_tensor({2, 3}, 3), testing::random_tensor({2, 4}, 4)}, o);
}

TEST(Subtract, ConfigRoundTrip) {
  layers::Subtract sub({.name = "diff"});
  testing::check_config_roundtrip(sub);
}

TEST(Subtract, ExactlyTwoInputs) {
  layers::Subtract sub({.name = "minus"});
  try {
    sub(std::vector<SymbolicTensor>{Input({2}), Input({2}), Input({2})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'minus' (Subtract)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("exactly 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[(None, 2), (None, 2), (None, 2)]"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tower
