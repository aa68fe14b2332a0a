// Keras' dropout in the attention layers (layers/multi_head_attention.h, layers/attention.h,
// layers/additive_attention.h): in training the weights after the softmax are dropped before they weigh the values;
// inference and rate 0 are untouched; gradients flow through the masks.
#include <cmath>
#include <string>

#include "api/ops/ops.h"
#include "layers/additive_attention.h"
#include "layers/attention.h"
#include "layers/multi_head_attention.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::random_tensor;

// Each training weight is 0 or the inference weight / (1 - rate); some are 0, some are not.
void expect_dropped(const Tensor& trained, const Tensor& inferred, float rate, const std::string& what) {
  const std::vector<float> t = trained.to_vector(), w = inferred.to_vector();
  ASSERT_EQ(t.size(), w.size());
  std::size_t zeros = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == 0.f) {
      ++zeros;
      continue;
    }
    ASSERT_NEAR(t[i], w[i] / (1.f - rate), 1e-5f) << what << ": weight " << i;
  }
  EXPECT_GT(zeros, 0u) << what << ": nothing dropped";
  EXPECT_LT(zeros, t.size()) << what << ": everything dropped";
}

TEST(AttentionDropout, AttentionDropsItsWeightsInTrainingAndReturnsThemDropped) {
  const std::vector<Tensor> in{random_tensor({2, 4, 3}, 1), random_tensor({2, 5, 3}, 2)};
  for (const bool additive : {false, true}) {
    const LayerPtr layer =
        additive ? LayerPtr(layers::AdditiveAttention({.dropout = 0.5f, .seed = 3, .return_attention_scores = true}))
                 : LayerPtr(layers::Attention({.dropout = 0.5f, .seed = 3, .return_attention_scores = true}));
    const std::vector<Tensor> trained = testing::run_layer(layer, in, true);
    const std::vector<Tensor> inferred = testing::run_layer(layer, in, false);
    const std::string what = additive ? "AdditiveAttention" : "Attention";
    expect_dropped(trained[1], inferred[1], 0.5f, what);
    // The output is the dropped weights times the values.
    testing::expect_near(trained[0], ops::matmul(trained[1], in[1]), 1e-5f, 1e-5f, what + " output");
    testing::check_gradients(layer, in);
  }
}

TEST(AttentionDropout, MultiHeadAttentionDropsTheScoresBeforeTheValuesAndReturnsThemUndropped) {
  const std::vector<Tensor> in{random_tensor({2, 4, 6}, 4), random_tensor({2, 5, 6}, 5)};
  layers::MultiHeadAttention plain({.num_heads = 2, .key_dim = 3, .return_attention_scores = true});
  layers::MultiHeadAttention dropped({.num_heads = 2, .key_dim = 3, .dropout = 0.5f, .return_attention_scores = true,
                                      .seed = 6});
  layers::MultiHeadAttention fused({.num_heads = 2, .key_dim = 3, .dropout = 0.5f, .seed = 6});
  const std::vector<SymbolicTensor> sym{Input({4, 6}), Input({5, 6})};
  plain(sym);
  dropped(sym);
  fused(sym);
  const auto w = plain->weights();
  for (const LayerPtr& other : {LayerPtr(dropped), LayerPtr(fused)})
    for (std::size_t k = 0; k < w.size(); ++k) other->weights()[k]->value.copy_from(w[k]->value);

  const std::vector<Tensor> inferred = testing::run_layer(plain, in, false);
  testing::expect_near(testing::run_layer(dropped, in, false)[0], inferred[0], 0.f, 0.f, "inference");
  testing::expect_near(testing::run_layer(fused, in, false)[0], inferred[0], 1e-5f, 1e-5f, "fused inference");
  const std::vector<Tensor> trained = testing::run_layer(dropped, in, true);
  testing::expect_near(trained[1], inferred[1], 0.f, 0.f, "the returned scores (before the dropout)");
  float difference = 0.f;
  const std::vector<float> a = trained[0].to_vector(), b = inferred[0].to_vector();
  for (std::size_t i = 0; i < a.size(); ++i) difference = std::max(difference, std::fabs(a[i] - b[i]));
  EXPECT_GT(difference, 1e-3f) << "training dropped nothing";
  // The fused layer leaves its fused op for the composed one when it drops: the same masks give the same output.
  testing::expect_near(testing::run_layer(fused, in, true)[0], trained[0], 1e-5f, 1e-5f, "fused layer in training");
  testing::check_gradients(dropped, in);
  testing::check_config_roundtrip(dropped);
  EXPECT_EQ(dropped->get_config().at("seed").as_int(), 6);
}

}  // namespace
}  // namespace tower
