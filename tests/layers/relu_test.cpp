#include "layers/relu.h"

#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::check_gradients;

const std::vector<float> kX = {-2.f, -0.5f, 0.3f, 1.f, 5.f, 7.f};

Tensor x_row() { return Tensor::from_vector(kX, {1, 6}); }

// -3.1 + 0.43 i for i < 24 in a scrambled order: -3.1 .. 6.79, at least 0.07 from the kinks at 0, 0.5 and 6.
Tensor away_from_kinks() {
  std::vector<float> v(24);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = -3.1f + 0.43f * static_cast<float>((i * 5) % 24);
  return Tensor::from_vector(v, {2, 3, 4});
}

TEST(ReLU, PlainForward) {
  layers::ReLU relu;
  testing::expect_near(testing::run_layer(relu, {x_row()})[0], {0.f, 0.f, 0.3f, 1.f, 5.f, 7.f});
}

TEST(ReLU, MaxValueSixIsReLU6) {
  layers::ReLU relu({.max_value = 6});
  testing::expect_near(testing::run_layer(relu, {x_row()})[0], {0.f, 0.f, 0.3f, 1.f, 5.f, 6.f});
}

TEST(ReLU, SlopeAndThresholdForward) {
  layers::ReLU relu({.max_value = 6, .negative_slope = 0.1f, .threshold = 0.5f});
  // Below 0.5: 0.1 * (x - 0.5); from 0.5 on: min(x, 6).
  testing::expect_near(testing::run_layer(relu, {x_row()})[0], {-0.25f, -0.1f, -0.02f, 1.f, 5.f, 6.f});
}

TEST(ReLU, ThresholdWithoutSlopeZeroesBelowIt) {
  layers::ReLU relu({.threshold = 1.5f});
  testing::expect_near(testing::run_layer(relu, {x_row()})[0], {0.f, 0.f, 0.f, 0.f, 5.f, 7.f});
}

TEST(ReLU, Gradients) {
  // Plain and capped read the output in backward; slope/threshold read the input.
  const std::vector<layers::ReLUOptions> configs = {
      {}, {.max_value = 6}, {.negative_slope = 0.2f}, {.max_value = 6, .negative_slope = 0.1f, .threshold = 0.5f}};
  for (std::size_t i = 0; i < configs.size(); ++i) {
    SCOPED_TRACE(i);
    layers::ReLU relu(configs[i]);
    check_gradients(relu, {away_from_kinks()});
  }
}

TEST(ReLU, BackwardReadsOnlyWhatItNeeds) {
  layers::ReLU plain, capped({.max_value = 6}), leaky({.negative_slope = 0.1f});
  EXPECT_TRUE(plain->backward_needs_outputs());
  EXPECT_FALSE(plain->backward_needs_inputs());
  EXPECT_TRUE(capped->backward_needs_outputs());
  EXPECT_TRUE(leaky->backward_needs_inputs());
  EXPECT_FALSE(leaky->backward_needs_outputs());
}

TEST(ReLU, ConfigRoundTrip) {
  layers::ReLU relu({.max_value = 6, .negative_slope = 0.1f, .threshold = 0.5f, .name = "act"});
  testing::check_config_roundtrip(relu);
  const Config c = relu->get_config();
  EXPECT_DOUBLE_EQ(c.at("max_value").as_double(), 6.0);
  EXPECT_NEAR(c.at("negative_slope").as_double(), 0.1, 1e-7);
  EXPECT_DOUBLE_EQ(c.at("threshold").as_double(), 0.5);
  layers::ReLU plain;
  EXPECT_TRUE(plain->get_config().at("max_value").is_null());
  testing::check_config_roundtrip(plain);
}

TEST(ReLU, RejectsNegativeMaxValueAndSlope) {
  EXPECT_THROW(layers::ReLU({.max_value = -1}), std::invalid_argument);
  EXPECT_THROW(layers::ReLU({.negative_slope = -0.1f}), std::invalid_argument);
  EXPECT_NO_THROW(layers::ReLU({.max_value = 0}));
}

TEST(ReLU, TwoInputsNameTheLayer) {
  layers::ReLU relu({.name = "r"});
  try {
    relu(std::vector<SymbolicTensor>{Input({3}), Input({3})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'r' (ReLU)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("got 2"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tower
