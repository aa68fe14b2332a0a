#include "layers/multi_head_attention.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "api/ops/ops.h"
#include "api/ops/recorder.h"
#include "api/training/gradient_tape.h"
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

// Weights in [-0.5, 0.5), so the scores are O(1) and the softmax is not saturated.
void randomize_weights(const LayerPtr& layer, std::uint64_t seed) {
  for (const VariablePtr& v : layer->weights()) v->value.copy_from(testing::random_tensor(v->value.shape(), seed++, -0.5f, 0.5f));
}

TEST(MultiHeadAttention, OutputShapesForSelfCrossAndOtherOutputShapes) {
  layers::MultiHeadAttention self({.num_heads = 2, .key_dim = 3});
  auto x = Input({5, 8});
  EXPECT_EQ(self({x, x})[0].shape(), Shape({-1, 5, 8}));
  layers::MultiHeadAttention cross({.num_heads = 2, .key_dim = 3, .return_attention_scores = true});
  const SymbolicTensors out = cross({Input({5, 8}), Input({7, 6}), Input({7, 4})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), Shape({-1, 5, 8}));
  EXPECT_EQ(out[1].shape(), Shape({-1, 2, 5, 7}));
  layers::MultiHeadAttention shaped({.num_heads = 2, .key_dim = 3, .output_shape = std::vector<int>{2, 3}});
  EXPECT_EQ(shaped({Input({5, 8}), Input({4, 8})})[0].shape(), Shape({-1, 5, 2, 3}));
  EXPECT_EQ(shaped->weights()[6]->value.shape(), Shape({2, 3, 2, 3}));
  EXPECT_EQ(shaped->weights()[7]->value.shape(), Shape({2, 3}));
  const Tensor q = testing::random_tensor({3, 5, 8}, 1), v = testing::random_tensor({3, 4, 8}, 2);
  EXPECT_EQ(testing::run_layer(shaped, {q, v})[0].shape(), Shape({3, 5, 2, 3}));
}

TEST(MultiHeadAttention, WeightsFollowKerasNamesPathsOrderAndShapes) {
  layers::MultiHeadAttention mha({.num_heads = 2, .key_dim = 3, .value_dim = 4, .name = "mha"});
  mha({Input({5, 8}), Input({7, 6}), Input({7, 9})});
  const std::vector<std::string> names{"query/kernel", "query/bias", "key/kernel", "key/bias",
                                       "value/kernel", "value/bias", "attention_output/kernel",
                                       "attention_output/bias"};
  const std::vector<Shape> shapes{{8, 2, 3}, {2, 3}, {9, 2, 3}, {2, 3}, {6, 2, 4}, {2, 4}, {2, 4, 8}, {8}};
  ASSERT_EQ(mha->weights().size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(mha->weights()[i]->name, names[i]);
    EXPECT_EQ(mha->weights()[i]->path, "mha/" + names[i]);
    EXPECT_EQ(mha->weights()[i]->value.shape(), shapes[i]) << names[i];
  }
  EXPECT_EQ(mha->weights()[1]->value.to_vector(), std::vector<float>(6, 0.f));
  layers::MultiHeadAttention no_bias({.num_heads = 1, .key_dim = 2, .use_bias = false});
  no_bias({Input({3, 4}), Input({3, 4})});
  ASSERT_EQ(no_bias->weights().size(), 4u);
  EXPECT_EQ(no_bias->weights()[3]->name, "attention_output/kernel");
}

TEST(MultiHeadAttention, GradientsOfInputsAndWeights) {
  layers::MultiHeadAttention self({.num_heads = 2, .key_dim = 3});
  self({Input({4, 5}), Input({4, 5})});
  randomize_weights(self, 10);
  testing::check_gradients(self, {testing::random_tensor({2, 4, 5}, 1), testing::random_tensor({2, 4, 5}, 2)});
  layers::MultiHeadAttention cross({.num_heads = 2, .key_dim = 2, .value_dim = 3,
                                    .output_shape = std::vector<int>{2, 2}, .return_attention_scores = true});
  cross({Input({3, 4}), Input({5, 3}), Input({5, 2})});
  randomize_weights(cross, 20);
  testing::check_gradients(cross, {testing::random_tensor({2, 3, 4}, 3), testing::random_tensor({2, 5, 3}, 4),
                                   testing::random_tensor({2, 5, 2}, 5)});
  layers::MultiHeadAttention causal({.num_heads = 2, .key_dim = 2, .use_causal_mask = true});
  causal({Input({4, 3}), Input({4, 3})});
  randomize_weights(causal, 30);
  testing::check_gradients(causal, {testing::random_tensor({2, 4, 3}, 6), testing::random_tensor({2, 4, 3}, 7)});
}

// A mask of 0s and 1s has no useful finite difference (a perturbed 0 counts as 1): the weights are checked, and the
// inputs through the same layer without the mask input.
TEST(MultiHeadAttention, GradientsWithAnAttentionMask) {
  layers::MultiHeadAttention masked({.num_heads = 2, .key_dim = 2, .use_attention_mask = true});
  const Tensor mask = Tensor::from_vector(std::vector<float>{1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 1}, {2, 3, 3});
  masked({Input({3, 4}), Input({3, 4}), Input({3, 3})});
  randomize_weights(masked, 40);
  testing::check_gradients(masked, {testing::random_tensor({2, 3, 4}, 8), testing::random_tensor({2, 3, 4}, 9), mask},
                           {.check_inputs = false});
}

TEST(MultiHeadAttention, MasksGiveMaskedPositionsNoWeight) {
  layers::MultiHeadAttention mha({.num_heads = 2, .key_dim = 2, .use_causal_mask = true, .return_attention_scores = true,
                                  .use_attention_mask = true});
  // Row 0 of each example may attend to s = 0 only (causal); the mask removes (t=1, s=0) and (t=2, s=1).
  std::vector<float> m(2 * 3 * 3, 1.f);
  m[3] = 0;  // [0, 1, 0]
  m[9 + 7] = 0;  // [1, 2, 1]
  const Tensor mask = Tensor::from_vector(m, {2, 3, 3});
  const std::vector<Tensor> out = testing::run_layer(
      mha, {testing::random_tensor({2, 3, 4}, 1), testing::random_tensor({2, 3, 4}, 2), mask});
  ASSERT_EQ(out[1].shape(), Shape({2, 2, 3, 3}));
  const std::vector<float> w = out[1].to_vector();
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < 3; ++t) {
        float row = 0;
        for (int s = 0; s < 3; ++s) {
          const float p = w[static_cast<std::size_t>(((n * 2 + h) * 3 + t) * 3 + s)];
          row += p;
          const bool keep = s <= t && m[static_cast<std::size_t>((n * 3 + t) * 3 + s)] != 0;
          if (!keep) EXPECT_EQ(p, 0.f) << "n " << n << " h " << h << " t " << t << " s " << s;
          else EXPECT_GT(p, 0.f);
        }
        EXPECT_NEAR(row, 1.f, 1e-6f);
      }
}

// The ops a call records, by name.
struct OpNames final : ops::Recorder {
  std::vector<std::string> names;
  void record(const ops::Record& r) override { names.push_back(r.op); }
  bool has(const std::string& op) const { return std::find(names.begin(), names.end(), op) != names.end(); }
};

TEST(MultiHeadAttention, TheFusedOpComputesTheAttentionUnlessTheScoresAreReturned) {
  EXPECT_TRUE(layers::MultiHeadAttention({.num_heads = 2, .key_dim = 3})->uses_fused_op());
  EXPECT_FALSE(
      layers::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .return_attention_scores = true})->uses_fused_op());
  EXPECT_FALSE(layers::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .fused = false})->uses_fused_op());
  for (const bool fused : {true, false}) {
    layers::MultiHeadAttention mha({.num_heads = 2, .key_dim = 3, .use_causal_mask = true, .fused = fused});
    mha({Input({4, 5}), Input({4, 5})});
    const Tensor x = testing::random_tensor({2, 4, 5}, 1);
    OpNames ops_run;
    {
      ops::RecordingScope scope(ops_run);
      mha->call({x, x}, false);
    }
    EXPECT_EQ(ops_run.has("dot_product_attention"), fused);
    EXPECT_EQ(ops_run.has("softmax"), !fused);
  }
}

// The fused op against the composed ops (Keras' formula, which the Keras fixtures check) over the layer's options:
// outputs and the gradients of inputs and weights, at lengths across the CPU kernel's blocks, with a query row whose
// every key is masked (the mean of the values on both paths, as Keras).
TEST(MultiHeadAttention, FusedAndComposedPathsAgree) {
  struct Case {
    layers::MultiHeadAttentionOptions options;
    Index t, s;
  };
  const std::vector<Case> cases = {
      {{.num_heads = 2, .key_dim = 5, .use_causal_mask = true}, 70, 70},
      {{.num_heads = 3, .key_dim = 4, .value_dim = 3, .output_shape = std::vector<int>{2, 3},
        .use_attention_mask = true},
       9, 130},
      {{.num_heads = 2, .key_dim = 3, .use_bias = false, .use_causal_mask = true, .use_attention_mask = true}, 6, 4},
  };
  std::uint64_t seed = 50;
  for (const Case& c : cases) {
    SCOPED_TRACE("T=" + std::to_string(c.t) + " S=" + std::to_string(c.s));
    layers::MultiHeadAttentionOptions composed_options = c.options;
    composed_options.fused = false;
    layers::MultiHeadAttention fused(c.options), composed(composed_options);
    const bool masked = c.options.use_attention_mask;
    std::vector<SymbolicTensor> symbolic{Input({c.t, 7}), Input({c.s, 6})};
    if (masked) symbolic.push_back(Input({c.t, c.s}));
    fused(symbolic);
    composed(symbolic);
    randomize_weights(fused, seed);
    for (std::size_t i = 0; i < fused->weights().size(); ++i)
      composed->weights()[i]->value.copy_from(fused->weights()[i]->value);
    std::vector<Tensor> inputs{testing::random_tensor({2, c.t, 7}, seed + 100),
                               testing::random_tensor({2, c.s, 6}, seed + 101)};
    if (masked) {
      std::vector<float> m(static_cast<std::size_t>(2 * c.t * c.s));
      const Tensor u = testing::random_tensor({2, c.t, c.s}, seed + 102, 0.f, 1.f);
      const std::vector<float> uv = u.to_vector();
      for (std::size_t i = 0; i < m.size(); ++i) m[i] = uv[i] < 0.7f ? 1.f : 0.f;
      for (Index s = 0; s < c.s; ++s) m[static_cast<std::size_t>(c.t + s)] = 0.f;  // example 0, query row 1
      inputs.push_back(Tensor::from_vector(m, {2, c.t, c.s}));
    }
    ++seed;
    const auto run = [&](const layers::MultiHeadAttention& layer) {
      GradientTape tape;
      std::vector<Tensor> sources{inputs[0], inputs[1]};
      for (const VariablePtr& v : layer->weights()) sources.push_back(v->value);
      for (const Tensor& x : sources) tape.watch(x);
      const Tensor y = layer->call(inputs, true)[0];
      const Tensor r = testing::random_tensor(y.shape(), 7);
      std::vector<Tensor> out{y};
      for (const Tensor& g : tape.gradient(ops::sum(y * r), sources, UnconnectedGradients::zero)) out.push_back(g);
      return out;
    };
    const std::vector<Tensor> want = run(composed), got = run(fused);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      testing::expect_near(got[i], want[i], 2e-5f, 2e-5f, i == 0 ? "output" : "gradient " + std::to_string(i - 1));
  }
}

TEST(MultiHeadAttention, ConfigHasKerasKeysAndDefaults) {
  layers::MultiHeadAttention mha({.num_heads = 4, .key_dim = 8, .name = "mha"});
  testing::check_config_roundtrip(mha);
  const Config c = mha->get_config();
  EXPECT_EQ(c.at("num_heads").as_int(), 4);
  EXPECT_EQ(c.at("key_dim").as_int(), 8);
  EXPECT_TRUE(c.at("value_dim").is_null());
  EXPECT_EQ(mha->value_dim(), 8);
  EXPECT_TRUE(c.at("use_bias").as_bool());
  EXPECT_TRUE(c.at("output_shape").is_null());
  EXPECT_TRUE(c.at("attention_axes").is_null());
  EXPECT_EQ(c.at("kernel_initializer").at("class_name").as_string(), "GlorotUniform");
  EXPECT_EQ(c.at("bias_initializer").at("class_name").as_string(), "Zeros");
  EXPECT_FALSE(c.at("use_causal_mask").as_bool());
  // Keras' own config: output_shape as an int, attention_axes as a list, dropout 0.
  const LayerPtr l = layer_from_config(Config::parse_json(
      R"({"class_name": "MultiHeadAttention", "config": {"name": "k", "num_heads": 2, "key_dim": 3, "value_dim": 5,
          "dropout": 0.0, "use_bias": false, "output_shape": 6, "attention_axes": [1], "trainable": true}})"));
  const auto* k = dynamic_cast<const layers::MultiHeadAttentionImpl*>(l.get());
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->value_dim(), 5);
  EXPECT_EQ(k->options().output_shape, std::vector<int>{6});
  testing::check_config_roundtrip(l);
}

TEST(MultiHeadAttention, BadArgumentsNameTheLayer) {
  EXPECT_TRUE(contains(message_of([] { layers::MultiHeadAttention({.num_heads = 0, .key_dim = 2, .name = "a"}); }),
                       "Layer 'a' (MultiHeadAttention): num_heads must be positive, got 0"));
  EXPECT_TRUE(contains(message_of([] { layers::MultiHeadAttention({.num_heads = 2, .key_dim = 0}); }), "key_dim"));
  EXPECT_TRUE(contains(message_of([] { layers::MultiHeadAttention({.num_heads = 2, .key_dim = 2, .dropout = 1.5f}); }),
                       "dropout must be in [0, 1), got 1.5"));
  EXPECT_TRUE(contains(message_of([] {
                         layers::MultiHeadAttention({.num_heads = 2, .key_dim = 2, .attention_axes = std::vector<int>{2}});
                       }),
                       "attention_axes"));
}

TEST(MultiHeadAttention, BadShapesNameTheLayerAndTheShapes) {
  const auto shape_message = [](layers::MultiHeadAttention mha, std::vector<SymbolicTensor> in) {
    try {
      mha(in);
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const layers::MultiHeadAttentionOptions o{.num_heads = 2, .key_dim = 2, .name = "m"};
  EXPECT_TRUE(contains(shape_message(layers::MultiHeadAttention(o), {Input({4, 3})}),
                       "Layer 'm' (MultiHeadAttention): takes [query, value] or [query, value, key], got 1 input(s)"));
  EXPECT_TRUE(contains(shape_message(layers::MultiHeadAttention(o), {Input({12}), Input({4, 3})}),
                       "query must be [N, length, dim] (rank 3), got shape (None, 12)"));
  EXPECT_TRUE(contains(shape_message(layers::MultiHeadAttention(o), {Input({4, 3}), Input({5, 3}), Input({6, 3})}),
                       "key and value lengths differ: query (None, 4, 3), value (None, 5, 3), key (None, 6, 3)"));
  layers::MultiHeadAttentionOptions masked = o;
  masked.use_attention_mask = true;
  EXPECT_TRUE(contains(shape_message(layers::MultiHeadAttention(masked), {Input({4, 3}), Input({5, 3}), Input({5, 4})}),
                       "the attention mask must be [N, T, S] = (None, 4, 5) for query (None, 4, 3), value (None, 5, 3), "
                       "key (None, 5, 3), got shape (None, 5, 4)"));
  layers::MultiHeadAttention built(o);
  built({Input({4, 3}), Input({4, 3})});
  EXPECT_TRUE(contains(shape_message(built, {Input({4, 5}), Input({4, 3})}),
                       "was built for a query of last size 3, got shape (None, 4, 5)"));
}

TEST(MultiHeadAttention, TrainsSavesAndLoadsInAModel) {
  set_random_seed(5);
  auto x = Input({6, 4});
  layers::MultiHeadAttention mha({.num_heads = 2, .key_dim = 4, .use_causal_mask = true, .name = "mha"});
  Model model({x}, {mha({x, x})[0]});
  model.compile(optimizers::Adam(0.01), losses::MeanSquaredError());
  const Tensor in = testing::random_tensor({16, 6, 4}, 3), target = testing::random_tensor({16, 6, 4}, 4);
  const callbacks::History hist = model.fit(in, target, {.epochs = 10, .batch_size = 8, .verbose = 0});
  EXPECT_LT(hist["loss"].back(), hist["loss"].front());
  const std::string path = ::testing::TempDir() + "mha.tower";
  model.save(path);
  Model loaded = Model::load(path);
  EXPECT_EQ(loaded.predict(in).to_vector(), model.predict(in).to_vector());
}

}  // namespace
}  // namespace tower
