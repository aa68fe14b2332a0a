#include "layers/softmax.h"

#include <cmath>

#include "testing/layer_test.h"

namespace tower {
namespace {

// Softmax of x[o, :, i] along the middle axis of [outer, axis, inner], by a naive loop.
std::vector<float> naive_softmax(const std::vector<float>& x, Index outer, Index axis, Index inner) {
  std::vector<float> y(x.size());
  for (Index o = 0; o < outer; ++o)
    for (Index i = 0; i < inner; ++i) {
      double sum = 0;
      for (Index a = 0; a < axis; ++a) sum += std::exp(static_cast<double>(x[static_cast<std::size_t>((o * axis + a) * inner + i)]));
      for (Index a = 0; a < axis; ++a) {
        const std::size_t k = static_cast<std::size_t>((o * axis + a) * inner + i);
        y[k] = static_cast<float>(std::exp(static_cast<double>(x[k])) / sum);
      }
    }
  return y;
}

TEST(Softmax, LastAxisHandComputed) {
  layers::Softmax softmax;
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 5, 5, 5}, {2, 3});
  testing::expect_near(testing::run_layer(softmax, {x})[0],
                       {0.0900305732f, 0.244728471f, 0.665240956f, 1 / 3.f, 1 / 3.f, 1 / 3.f});
}

TEST(Softmax, MiddleAxis) {
  const Tensor x = testing::random_tensor({2, 3, 4}, 1, -3.f, 3.f);
  for (int axis : {1, -2}) {
    layers::Softmax softmax({.axis = axis});
    testing::expect_near(testing::run_layer(softmax, {x})[0], naive_softmax(x.to_vector(), 2, 3, 4), 1e-6f, 1e-5f);
  }
  layers::Softmax last({.axis = 2});
  testing::expect_near(testing::run_layer(last, {x})[0], naive_softmax(x.to_vector(), 6, 4, 1), 1e-6f, 1e-5f);
}

TEST(Softmax, Gradients) {
  for (int axis : {-1, 1, 2}) {
    SCOPED_TRACE(axis);
    layers::Softmax softmax({.axis = axis});
    testing::check_gradients(softmax, {testing::random_tensor({2, 3, 4}, 2, -2.f, 2.f)});
  }
}

TEST(Softmax, FusedLogitGradientOnlyOverTheLastAxis) {
  layers::Softmax last, middle({.axis = 1});
  EXPECT_TRUE(last->softmax_output());
  EXPECT_FALSE(middle->softmax_output());
  const Tensor x = testing::random_tensor({2, 3}, 1), dy = testing::random_tensor({2, 3}, 2);
  Tensor y(x.shape()), dx(x.shape());
  std::vector<Tensor> ins{x}, outs{y}, douts{dy}, dins{dx};
  std::unique_ptr<LayerState> state;
  ForwardContext f;
  f.inputs = ins;
  f.outputs = outs;
  f.state = &state;
  last->forward(f);
  BackwardContext b;
  b.outputs = outs;
  b.grad_outputs = douts;
  b.grad_inputs = dins;
  b.state = &state;
  b.output_grad_is_logits = true;
  last->backward(b);
  testing::expect_near(dx, dy, 0.f, 0.f);
}

TEST(Softmax, ConfigRoundTrip) {
  layers::Softmax softmax({.axis = 1, .name = "probs"});
  testing::check_config_roundtrip(softmax);
  EXPECT_EQ(softmax->get_config().at("axis").as_int(), 1);
}

TEST(Softmax, AxisOutOfRangeNamesLayerAndShape) {
  layers::Softmax softmax({.axis = 3, .name = "sm"});
  try {
    softmax(Input({4, 5}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'sm'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("axis 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 4, 5)"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tower
