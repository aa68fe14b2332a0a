#include "layers/additive_attention.h"

#include <cmath>
#include <functional>
#include <string>

#include "testing/layer_test.h"

namespace tower {
namespace {

// One query, two keys: scores sum(scale * tanh(q + k)) over the last axis.
TEST(AdditiveAttention, ScoresAreTheScaledSumOfTanhs) {
  layers::AdditiveAttention att({.return_attention_scores = true});
  const Tensor q = Tensor::from_vector(std::vector<float>{0.5f, -0.25f}, {1, 1, 2});
  const Tensor v = Tensor::from_vector(std::vector<float>{1, 3}, {1, 2, 1});
  const Tensor k = Tensor::from_vector(std::vector<float>{0.1f, 0.2f, -0.3f, 0.4f}, {1, 2, 2});
  auto in = std::vector<SymbolicTensor>{Input({1, 2}), Input({2, 1}), Input({2, 2})};
  att(in);
  att->scale()->value.copy_from(Tensor::from_vector(std::vector<float>{2.f, -1.f}, {2}));
  const float s0 = 2 * std::tanh(0.6f) - std::tanh(-0.05f), s1 = 2 * std::tanh(0.2f) - std::tanh(0.15f);
  const float p = 1 / (1 + std::exp(s1 - s0));
  const std::vector<Tensor> out = testing::run_layer(att, {q, v, k});
  testing::expect_near(out[1], {p, 1 - p});
  testing::expect_near(out[0], {p + 3 * (1 - p)});
}

TEST(AdditiveAttention, WeightsShapesAndGradients) {
  layers::AdditiveAttention att({.use_causal_mask = true});
  EXPECT_EQ(att({Input({3, 4}), Input({3, 2}), Input({3, 4})})[0].shape(), Shape({-1, 3, 2}));
  ASSERT_EQ(att->weights().size(), 1u);
  EXPECT_EQ(att->weights()[0]->name, "scale");
  EXPECT_EQ(att->scale()->value.shape(), Shape({4}));
  testing::check_gradients(att, {testing::random_tensor({2, 3, 4}, 1), testing::random_tensor({2, 3, 2}, 2),
                                 testing::random_tensor({2, 3, 4}, 3)});
  layers::AdditiveAttention unscaled({.use_scale = false});
  testing::check_gradients(unscaled, {testing::random_tensor({2, 3, 4}, 4), testing::random_tensor({2, 5, 4}, 5)});
  EXPECT_TRUE(unscaled->weights().empty());
}

TEST(AdditiveAttention, ConfigHasKerasKeysAndDefaults) {
  layers::AdditiveAttention att({.name = "add"});
  testing::check_config_roundtrip(att);
  const Config c = att->get_config();
  EXPECT_TRUE(c.at("use_scale").as_bool());
  EXPECT_EQ(c.at("dropout").as_double(), 0.0);
  EXPECT_FALSE(c.contains("score_mode"));
}

TEST(AdditiveAttention, BadArgumentsAndShapesNameTheLayer) {
  try {
    layers::AdditiveAttention({.dropout = 1.f, .name = "aa"});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Layer 'aa' (AdditiveAttention): dropout must be in [0, 1), got 1"),
              std::string::npos)
        << e.what();
  }
  try {
    layers::AdditiveAttention({.name = "ab"})({Input({3, 4}), Input({5, 3})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("Layer 'ab' (AdditiveAttention): query and key sizes differ"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tower
