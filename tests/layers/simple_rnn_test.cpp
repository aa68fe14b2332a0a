#include "layers/simple_rnn.h"

#include <cmath>

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(SimpleRNN, WeightsFollowKerasNamesAndShapes) {
  layers::SimpleRNN rnn({.units = 3});
  rnn(Input({5, 2}));
  ASSERT_EQ(rnn->weights().size(), 3u);
  EXPECT_EQ(rnn->weights()[0]->name, "kernel");
  EXPECT_EQ(rnn->weights()[1]->name, "recurrent_kernel");
  EXPECT_EQ(rnn->weights()[2]->name, "bias");
  EXPECT_EQ(rnn->kernel()->value.shape(), Shape({2, 3}));
  EXPECT_EQ(rnn->recurrent_kernel()->value.shape(), Shape({3, 3}));
}

// One unit, weights 1: h_t = tanh(x_t + h_{t-1}).
TEST(SimpleRNN, ComputesTheRecurrence) {
  layers::SimpleRNN rnn({.units = 1, .return_sequences = true});
  rnn(Input({3, 1}));
  rnn->kernel()->value.fill(1.f);
  rnn->recurrent_kernel()->value.fill(1.f);
  const Tensor x = Tensor::from_vector(std::vector<float>{0.5f, -0.25f, 1.f}, {1, 3, 1});
  const float h1 = std::tanh(0.5f), h2 = std::tanh(-0.25f + h1), h3 = std::tanh(1.f + h2);
  testing::expect_near(testing::run_layer(rnn, {x})[0], {h1, h2, h3});
}

}  // namespace
}  // namespace tower
