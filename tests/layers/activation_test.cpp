#include "layers/activation.h"

#include <cmath>

#include "testing/layer_test.h"

namespace tower {
namespace {

// Values of each activation are checked name by name in tests/api/activations_test.cpp; here, the layer.

TEST(Activation, AppliesTheNamedFunction) {
  layers::Activation tanh_layer({.activation = "tanh"});
  const Tensor x = Tensor::from_vector(std::vector<float>{-1.f, 0.f, 0.5f, 2.f}, {2, 2});
  testing::expect_near(testing::run_layer(tanh_layer, {x})[0],
                       {std::tanh(-1.f), 0.f, std::tanh(0.5f), std::tanh(2.f)});
  layers::Activation linear;
  testing::expect_near(testing::run_layer(linear, {x})[0], {-1.f, 0.f, 0.5f, 2.f});
}

TEST(Activation, SoftmaxOverTheLastAxisOfRank3) {
  layers::Activation softmax({.activation = "softmax"});
  const Tensor x = Tensor::from_vector(std::vector<float>{0, 0, 1, 2, 3, 0}, {1, 2, 3});
  const float e = std::exp(1.f), e2 = std::exp(2.f), e3 = std::exp(3.f);
  testing::expect_near(testing::run_layer(softmax, {x})[0],
                       {1 / (2 + e), 1 / (2 + e), e / (2 + e), e2 / (e2 + e3 + 1), e3 / (e2 + e3 + 1), 1 / (e2 + e3 + 1)});
}

TEST(Activation, GradientsOnRank4) {
  for (const char* name : {"linear", "sigmoid", "gelu", "softmax"}) {
    SCOPED_TRACE(name);
    layers::Activation act({.activation = name});
    testing::check_gradients(act, {testing::random_tensor({2, 2, 3, 4}, 3)});
  }
}

TEST(Activation, BackwardReadsOnlyWhatItNeeds) {
  layers::Activation linear, sigmoid({.activation = "sigmoid"}), gelu({.activation = "gelu"});
  EXPECT_FALSE(linear->backward_needs_inputs());
  EXPECT_FALSE(linear->backward_needs_outputs());
  EXPECT_FALSE(sigmoid->backward_needs_inputs());
  EXPECT_TRUE(sigmoid->backward_needs_outputs());
  EXPECT_TRUE(gelu->backward_needs_inputs());
}

TEST(Activation, FusedSoftmaxPassesTheLogitGradientThrough) {
  layers::Activation softmax({.activation = "softmax"});
  layers::Activation tanh_layer({.activation = "tanh"});
  EXPECT_TRUE(softmax->softmax_output());
  EXPECT_FALSE(tanh_layer->softmax_output());
  const Tensor x = testing::random_tensor({2, 3}, 1), dy = testing::random_tensor({2, 3}, 2);
  Tensor y(x.shape()), dx(x.shape());
  std::vector<Tensor> ins{x}, outs{y}, douts{dy}, dins{dx};
  std::unique_ptr<LayerState> state;
  ForwardContext f;
  f.inputs = ins;
  f.outputs = outs;
  f.state = &state;
  softmax->forward(f);
  BackwardContext b;
  b.inputs = ins;
  b.outputs = outs;
  b.grad_outputs = douts;
  b.grad_inputs = dins;
  b.state = &state;
  b.output_grad_is_logits = true;
  softmax->backward(b);
  testing::expect_near(dx, dy, 0.f, 0.f);
}

TEST(Activation, ConfigRoundTrip) {
  layers::Activation act({.activation = "relu6", .name = "six"});
  testing::check_config_roundtrip(act);
  EXPECT_EQ(act->get_config().at("activation").as_string(), "relu6");
}

TEST(Activation, UnknownNameThrows) {
  EXPECT_THROW(layers::Activation({.activation = "nope"}), std::invalid_argument);
}

TEST(Activation, TwoInputsNameTheLayer) {
  layers::Activation act({.activation = "tanh", .name = "t"});
  try {
    act(std::vector<SymbolicTensor>{Input({3}), Input({3})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("'t' (Activation)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tower
