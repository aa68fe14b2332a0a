#include "layers/batch_normalization.h"

#include <cmath>

#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::check_gradients;
using testing::GradCheckOptions;
using testing::random_tensor;

// x [4, 2]: channel 0 = 1, 2, 3, 4 (mean 2.5, biased variance 1.25); channel 1 = 0, 0, 4, 4 (mean 2, variance 4).
Tensor hand_input() { return Tensor::from_vector(std::vector<float>{1, 0, 2, 0, 3, 4, 4, 4}, {4, 2}); }

void set_values(const VariablePtr& v, std::vector<float> values) {
  v->value.copy_from(Tensor::from_vector(values, v->value.shape()));
}

TEST(BatchNormalization, TrainingNormalisesWithBatchStatisticsAndUpdatesMovingOnes) {
  layers::BatchNormalization bn(
      {.beta_initializer = initializers::Constant(0.5), .gamma_initializer = initializers::Constant(2.0)});
  const auto y = testing::run_layer(bn, {hand_input()}, /*training=*/true);
  const float s0 = 2.f / std::sqrt(1.25f + 1e-3f), s1 = 2.f / std::sqrt(4.f + 1e-3f);
  testing::expect_near(y[0],
                       {-1.5f * s0 + 0.5f, -2.f * s1 + 0.5f, -0.5f * s0 + 0.5f, -2.f * s1 + 0.5f, 0.5f * s0 + 0.5f,
                        2.f * s1 + 0.5f, 1.5f * s0 + 0.5f, 2.f * s1 + 0.5f},
                       1e-5f, 1e-5f, "y");
  // One step with momentum 0.99 from the initial 0 and 1: moving = 0.99 * moving + 0.01 * batch statistic,
  // with the biased variance.
  testing::expect_near(bn->moving_mean()->value, {0.025f, 0.02f}, 1e-6f, 1e-5f, "moving_mean");
  testing::expect_near(bn->moving_variance()->value, {0.99f + 0.0125f, 0.99f + 0.04f}, 1e-6f, 1e-5f, "moving_variance");
}

TEST(BatchNormalization, MomentumFollowsTheOption) {
  layers::BatchNormalization bn({.momentum = 0.5});
  testing::run_layer(bn, {hand_input()}, true);
  testing::expect_near(bn->moving_mean()->value, {1.25f, 1.f}, 1e-6f, 1e-5f, "moving_mean");
  testing::expect_near(bn->moving_variance()->value, {1.125f, 2.5f}, 1e-6f, 1e-5f, "moving_variance");
}

TEST(BatchNormalization, InferenceUsesMovingStatistics) {
  layers::BatchNormalization bn({.epsilon = 0.01});
  bn(Input({2}));
  set_values(bn->gamma(), {1.f, 3.f});
  set_values(bn->beta(), {0.f, -1.f});
  set_values(bn->moving_mean(), {1.f, 2.f});
  set_values(bn->moving_variance(), {3.99f, 0.24f});  // + epsilon: 4 and 0.25
  const auto y = testing::run_layer(bn, {hand_input()}, /*training=*/false);
  // y0 = (x - 1) / 2, y1 = 3 * (x - 2) / 0.5 - 1
  testing::expect_near(y[0], {0.f, -13.f, 0.5f, -13.f, 1.f, 11.f, 1.5f, 11.f}, 1e-5f, 1e-5f, "y");
  testing::expect_near(bn->moving_mean()->value, {1.f, 2.f}, 0.f, 0.f, "moving_mean unchanged");
  testing::expect_near(bn->moving_variance()->value, {3.99f, 0.24f}, 0.f, 0.f, "moving_variance unchanged");
}

TEST(BatchNormalization, FrozenLayerUsesMovingStatisticsInATrainingCall) {
  layers::BatchNormalization bn({.epsilon = 0.0});
  bn(Input({2}));
  set_values(bn->moving_mean(), {1.f, 2.f});
  set_values(bn->moving_variance(), {4.f, 16.f});
  bn->set_trainable(false);
  const auto y = testing::run_layer(bn, {hand_input()}, /*training=*/true);
  testing::expect_near(y[0], {0.f, -0.5f, 0.5f, -0.5f, 1.f, 0.5f, 1.5f, 0.5f}, 1e-6f, 1e-6f, "y");
  testing::expect_near(bn->moving_mean()->value, {1.f, 2.f}, 0.f, 0.f, "moving_mean unchanged");
  testing::expect_near(bn->moving_variance()->value, {4.f, 16.f}, 0.f, 0.f, "moving_variance unchanged");
}

TEST(BatchNormalization, WeightsInKerasOrder) {
  layers::BatchNormalization bn({.name = "bn"});
  bn(Input({5, 5, 3}));
  const auto w = bn->weights();
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0]->path, "bn/gamma");
  EXPECT_EQ(w[1]->path, "bn/beta");
  EXPECT_EQ(w[2]->path, "bn/moving_mean");
  EXPECT_EQ(w[3]->path, "bn/moving_variance");
  EXPECT_TRUE(w[0]->trainable && w[1]->trainable);
  EXPECT_FALSE(w[2]->trainable || w[3]->trainable);
  EXPECT_EQ(bn->trainable_weights().size(), 2u);
  EXPECT_EQ(bn->count_params(), 12);
  EXPECT_TRUE(bn->has_training_behavior());
  testing::expect_near(bn->moving_variance()->value, {1.f, 1.f, 1.f}, 0.f, 0.f, "moving_variance init");
}

TEST(BatchNormalization, WithoutCenterAndScale) {
  layers::BatchNormalization bn({.center = false, .scale = false});
  bn(Input({2}));
  EXPECT_EQ(bn->gamma(), nullptr);
  EXPECT_EQ(bn->beta(), nullptr);
  EXPECT_EQ(bn->weights().size(), 2u);
  EXPECT_TRUE(bn->trainable_weights().empty());
  const auto y = testing::run_layer(bn, {hand_input()}, true);
  const float s0 = 1.f / std::sqrt(1.25f + 1e-3f), s1 = 1.f / std::sqrt(4.f + 1e-3f);
  testing::expect_near(y[0], {-1.5f * s0, -2.f * s1, -0.5f * s0, -2.f * s1, 0.5f * s0, 2.f * s1, 1.5f * s0, 2.f * s1},
                       1e-5f, 1e-5f, "y");
}

// Gamma and beta away from 1 and 0, so their gradients are not a special case.
layers::BatchNormalization random_affine_bn(layers::BatchNormalizationOptions o = {}) {
  o.beta_initializer = initializers::RandomNormal({.mean = 0.0, .stddev = 0.5, .seed = 3});
  o.gamma_initializer = initializers::RandomNormal({.mean = 1.0, .stddev = 0.5, .seed = 4});
  return layers::BatchNormalization(o);
}

TEST(BatchNormalization, GradientsInTraining) {
  check_gradients(random_affine_bn(), {random_tensor({2, 3, 3, 4}, 1)});
  check_gradients(random_affine_bn(), {random_tensor({6, 5}, 2, -3.f, 2.f)});
}

TEST(BatchNormalization, GradientsInInference) {
  auto bn = random_affine_bn();
  bn(Input({3, 3, 4}));
  set_values(bn->moving_mean(), {0.1f, -0.2f, 0.3f, 0.f});
  set_values(bn->moving_variance(), {0.5f, 2.f, 1.f, 0.3f});
  GradCheckOptions o;
  o.training = false;
  check_gradients(bn, {random_tensor({2, 3, 3, 4}, 3)}, o);
}

TEST(BatchNormalization, FrozenLayerPassesInputGradientsInTraining) {
  auto bn = random_affine_bn();
  bn(Input({4}));
  set_values(bn->moving_mean(), {0.1f, -0.2f, 0.3f, 0.f});
  set_values(bn->moving_variance(), {0.5f, 2.f, 1.f, 0.3f});
  bn->set_trainable(false);
  GradCheckOptions o;
  o.check_weights = false;
  check_gradients(bn, {random_tensor({5, 4}, 4)}, o);
}

TEST(BatchNormalization, GradientsWithoutCenterOrScale) {
  check_gradients(random_affine_bn({.center = false}), {random_tensor({3, 2, 2, 3}, 5)});
  check_gradients(random_affine_bn({.scale = false}), {random_tensor({3, 2, 2, 3}, 6)});
  GradCheckOptions inference;
  inference.training = false;
  check_gradients(random_affine_bn({.center = false}), {random_tensor({3, 2, 2, 3}, 7)}, inference);
  check_gradients(random_affine_bn({.scale = false}), {random_tensor({3, 2, 2, 3}, 8)}, inference);
}

TEST(BatchNormalization, ConfigRoundTrip) {
  layers::BatchNormalization bn({.momentum = 0.999,
                                 .epsilon = 1e-5,
                                 .center = false,
                                 .gamma_regularizer = regularizers::L2(1e-4),
                                 .synchronized = true,
                                 .name = "block_1_bn"});
  bn(Input({4, 4, 8}));
  testing::check_config_roundtrip(bn);
  const Config c = bn->get_config();
  EXPECT_EQ(c.at("axis").as_int(), -1);
  EXPECT_DOUBLE_EQ(c.at("momentum").as_double(), 0.999);
  EXPECT_DOUBLE_EQ(c.at("epsilon").as_double(), 1e-5);
  EXPECT_FALSE(c.at("center").as_bool());
  EXPECT_TRUE(c.at("synchronized").as_bool());
}

TEST(BatchNormalization, MismatchedChannelsNameLayerAndShapes) {
  layers::BatchNormalization bn({.name = "bn_a"});
  bn(Input({5, 5, 3}));
  try {
    bn(Input({5, 5, 4}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'bn_a'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 5, 5, 4)"), std::string::npos) << msg;
  }
  layers::BatchNormalization rank1({.name = "bn_b"});
  try {
    rank1(Input(Shape{}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("'bn_b'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(None,)"), std::string::npos) << e.what();
  }
}

TEST(BatchNormalization, OnlyTheLastAxisIsSupported) {
  layers::BatchNormalization last({.axis = 3});
  EXPECT_NO_THROW(last(Input({5, 5, 3})));
  layers::BatchNormalization first({.axis = 1});
  EXPECT_THROW(first(Input({5, 5, 3})), std::invalid_argument);
  layers::BatchNormalization out_of_range({.axis = 7});
  EXPECT_THROW(out_of_range(Input({5, 5, 3})), std::invalid_argument);
  EXPECT_THROW(layers::BatchNormalization({.epsilon = -1.0}), std::invalid_argument);
}

}  // namespace
}  // namespace tower
