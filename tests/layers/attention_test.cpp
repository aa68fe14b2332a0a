#include "layers/attention.h"

#include <cmath>
#include <functional>
#include <string>

#include "testing/layer_test.h"

namespace tower {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

::testing::AssertionResult contains(const std::string& s, const std::string& part) {
  if (s.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "the message \"" << s << "\" lacks \"" << part << "\"";
}

// One query, two keys: scores q.k = [1, 0], weights softmax([1, 0]), output their mix of the values.
TEST(Attention, DotScoresMixTheValues) {
  layers::Attention att({.return_attention_scores = true});
  const Tensor q = Tensor::from_vector(std::vector<float>{1, 0}, {1, 1, 2});
  const Tensor v = Tensor::from_vector(std::vector<float>{10, 20}, {1, 2, 1});
  const Tensor k = Tensor::from_vector(std::vector<float>{1, 0, 0, 1}, {1, 2, 2});
  const std::vector<Tensor> out = testing::run_layer(att, {q, v, k});
  const float p = std::exp(1.f) / (std::exp(1.f) + 1.f);
  testing::expect_near(out[1], {p, 1 - p});
  testing::expect_near(out[0], {10 * p + 20 * (1 - p)});
}

TEST(Attention, OutputShapesAndWeights) {
  layers::Attention att({.use_scale = true, .score_mode = "concat", .return_attention_scores = true});
  const SymbolicTensors out = att({Input({5, 3}), Input({7, 4}), Input({7, 3})});
  EXPECT_EQ(out[0].shape(), Shape({-1, 5, 4}));
  EXPECT_EQ(out[1].shape(), Shape({-1, 5, 7}));
  ASSERT_EQ(att->weights().size(), 2u);
  EXPECT_EQ(att->weights()[0]->name, "scale");
  EXPECT_EQ(att->weights()[1]->name, "concat_score_weight");
  EXPECT_EQ(att->scale()->value.shape(), Shape({}));
  EXPECT_EQ(att->concat_score_weight()->value.to_vector(), std::vector<float>{1.f});
  layers::Attention plain;
  plain({Input({5, 3}), Input({7, 3})});
  EXPECT_TRUE(plain->weights().empty());
}

TEST(Attention, Gradients) {
  const Tensor q = testing::random_tensor({2, 3, 4}, 1), v = testing::random_tensor({2, 5, 2}, 2),
               k = testing::random_tensor({2, 5, 4}, 3);
  layers::Attention dot({.use_scale = true});
  dot({Input({3, 4}), Input({5, 2}), Input({5, 4})});
  dot->scale()->value.fill(0.7f);
  testing::check_gradients(dot, {q, v, k});
  layers::Attention concat({.use_scale = true, .score_mode = "concat", .use_causal_mask = true,
                            .return_attention_scores = true});
  concat({Input({3, 4}), Input({5, 2}), Input({5, 4})});
  concat->scale()->value.fill(0.8f);
  concat->concat_score_weight()->value.fill(1.3f);
  testing::check_gradients(concat, {q, v, k});
}

TEST(Attention, CausalMaskGivesLaterPositionsNoWeight) {
  layers::Attention att({.use_causal_mask = true, .return_attention_scores = true});
  const Tensor x = testing::random_tensor({1, 3, 2}, 4);
  const std::vector<float> w = testing::run_layer(att, {x, x})[1].to_vector();
  EXPECT_EQ(w[1], 0.f);
  EXPECT_EQ(w[2], 0.f);
  EXPECT_EQ(w[5], 0.f);
  EXPECT_FLOAT_EQ(w[0], 1.f);
}

TEST(Attention, ConfigHasKerasKeysAndDefaults) {
  layers::Attention att({.name = "att"});
  testing::check_config_roundtrip(att);
  const Config c = att->get_config();
  EXPECT_FALSE(c.at("use_scale").as_bool());
  EXPECT_EQ(c.at("score_mode").as_string(), "dot");
  EXPECT_EQ(c.at("dropout").as_double(), 0.0);
  EXPECT_TRUE(c.at("seed").is_null());
  const LayerPtr l = layer_from_config(Config::parse_json(
      R"({"class_name": "Attention", "config": {"name": "k", "use_scale": true, "score_mode": "concat",
          "dropout": 0.0, "seed": null, "trainable": true, "dtype": "float32"}})"));
  EXPECT_EQ(l->get_config().at("score_mode").as_string(), "concat");
}

TEST(Attention, BadArgumentsAndShapesNameTheLayer) {
  EXPECT_TRUE(contains(message_of([] { layers::Attention({.score_mode = "add", .name = "a"}); }),
                       "Layer 'a' (Attention): score_mode must be \"dot\" or \"concat\", got \"add\""));
  EXPECT_TRUE(contains(message_of([] { layers::Attention({.dropout = -0.5f}); }), "dropout must be in [0, 1), got -0.5"));
  const auto shape_message = [](std::vector<SymbolicTensor> in) {
    try {
      layers::Attention({.name = "s"})(in);
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_TRUE(contains(shape_message({Input({3, 4})}),
                       "Layer 's' (Attention): takes [query, value] or [query, value, key], got 1 input(s)"));
  EXPECT_TRUE(contains(shape_message({Input({3, 4}), Input({5, 2})}),
                       "query and key sizes differ: query (None, 3, 4), value (None, 5, 2)"));
  EXPECT_TRUE(contains(shape_message({Input({3, 4}), Input({5, 2}), Input({6, 4})}), "key and value lengths differ"));
  EXPECT_TRUE(contains(shape_message({Input({4}), Input({4})}), "inputs must be [N, length, dim] (rank 3)"));
}

}  // namespace
}  // namespace tower
