#include "layers/lstm.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

TEST(LSTM, WeightsFollowKerasNamesShapesAndTheForgetBias) {
  layers::LSTM lstm({.units = 3});
  lstm(Input({5, 2}));
  ASSERT_EQ(lstm->weights().size(), 3u);
  EXPECT_EQ(lstm->weights()[0]->name, "kernel");
  EXPECT_EQ(lstm->weights()[1]->name, "recurrent_kernel");
  EXPECT_EQ(lstm->weights()[2]->name, "bias");
  EXPECT_EQ(lstm->kernel()->value.shape(), Shape({2, 12}));
  EXPECT_EQ(lstm->recurrent_kernel()->value.shape(), Shape({3, 12}));
  EXPECT_EQ(lstm->bias()->value.to_vector(), (std::vector<float>{0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0}));
  layers::LSTM plain({.units = 2, .unit_forget_bias = false});
  plain(Input({5, 2}));
  EXPECT_EQ(plain->bias()->value.to_vector(), std::vector<float>(8, 0.f));
  layers::LSTM no_bias({.units = 2, .use_bias = false});
  no_bias(Input({5, 2}));
  EXPECT_EQ(no_bias->weights().size(), 2u);
}

// Keras' default recurrent initializer is orthogonal: U [units, 4 units] has orthonormal rows.
TEST(LSTM, TheRecurrentKernelStartsOrthogonal) {
  layers::LSTM lstm({.units = 4});
  lstm(Input({3, 2}));
  const std::vector<float> u = lstm->recurrent_kernel()->value.to_vector();
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      double dot = 0;
      for (int k = 0; k < 16; ++k) dot += double(u[static_cast<std::size_t>(a * 16 + k)]) * u[static_cast<std::size_t>(b * 16 + k)];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-5);
    }
}

TEST(LSTM, UsesTheFusedOpOnlyForKerasDefaultActivations) {
  EXPECT_TRUE(layers::LSTM({.units = 2})->uses_fused_op());
  EXPECT_FALSE(layers::LSTM({.units = 2, .activation = "relu"})->uses_fused_op());
  EXPECT_FALSE(layers::LSTM({.units = 2, .recurrent_activation = "hard_sigmoid"})->uses_fused_op());
  EXPECT_FALSE(layers::LSTM({.units = 2, .fused = false})->uses_fused_op());
}

}  // namespace
}  // namespace tower
