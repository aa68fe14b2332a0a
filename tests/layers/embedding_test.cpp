#include "layers/embedding.h"

#include <string>

#include "layers/dense.h"
#include "layers/flatten.h"
#include "layers/lambda.h"
#include "layers/layer_normalization.h"
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

// Ids 0..n-1 of a [rows, cols] int32 tensor, repeating.
Tensor ids(Index rows, Index cols, std::int32_t n) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>((i * 7 + 3) % static_cast<std::size_t>(n));
  return Tensor::from_vector(v, {rows, cols});
}

TEST(Embedding, PredictLooksUpTheRowsOfInt32Ids) {
  layers::Embedding emb({.input_dim = 4, .output_dim = 2});
  auto in = Input({3});
  Model model({in}, {emb(in)});
  emb->embeddings()->value.copy_from(Tensor::from_vector(std::vector<float>{0, 1, 10, 11, 20, 21, 30, 31}, {4, 2}));
  const Tensor x = Tensor::from_vector(std::vector<std::int32_t>{3, 0, 3, 1, 2, 1}, {2, 3});
  const Tensor y = model.predict(x);
  EXPECT_EQ(y.shape(), Shape({2, 3, 2}));
  testing::expect_near(y, {30, 31, 0, 1, 30, 31, 10, 11, 20, 21, 10, 11});
}

TEST(Embedding, OutputShapeAppendsOutputDimToAnyIdShape) {
  layers::Embedding emb({.input_dim = 9, .output_dim = 5});
  EXPECT_EQ(emb(Input({4, 3})).shape(), Shape({-1, 4, 3, 5}));
  layers::Embedding flat({.input_dim = 9, .output_dim = 5});
  EXPECT_EQ(flat(Input({6})).shape(), Shape({-1, 6, 5}));
  EXPECT_EQ(emb->embeddings()->value.shape(), Shape({9, 5}));
}

// Repeated ids: the table's gradient adds their rows' gradients (central differences on the table).
TEST(Embedding, TableGradientAddsUpRepeatedIds) {
  layers::Embedding emb({.input_dim = 5, .output_dim = 3});
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 1, 4, 0, 1, 4, 4, 2}, {2, 4});
  testing::check_gradients(emb, {x}, {.check_inputs = false});
}

TEST(Embedding, AnIdOutOfRangeNamesTheLayerAndTheId) {
  layers::Embedding emb({.input_dim = 10, .output_dim = 2, .name = "tokens"});
  auto in = Input({3});
  Model model({in}, {emb(in)});
  const Tensor x = Tensor::from_vector(std::vector<std::int32_t>{1, 2, 3, 4, 12, 5}, {2, 3});
  const std::string m = message_of([&] { model.predict(x); });
  EXPECT_NE(m.find("Layer 'tokens' (Embedding): "), std::string::npos) << m;
  EXPECT_NE(m.find("index 12 at position 4"), std::string::npos) << m;
  EXPECT_NE(m.find("size 10"), std::string::npos) << m;
}

TEST(Embedding, MaskZeroFromAConfigMasksIdZero) {
  Config c = Config::map();
  c.set("input_dim", 10);
  c.set("output_dim", 2);
  c.set("mask_zero", true);
  Config s = Config::map();
  s.set("class_name", "Embedding");
  s.set("config", c);
  const LayerPtr layer = layer_from_config(s);
  SymbolicTensor ids = Input({3});
  const SymbolicTensor out = (*layer)(ids);
  ASSERT_TRUE(out.mask().defined());
  Model model(ids, out);
  Plan& plan = model->plan_for(2, false);
  plan.set_input(0, Tensor::from_vector(std::vector<float>{3, 0, 1, 0, 0, 9}, {2, 3}));
  plan.forward();
  EXPECT_EQ(plan.output_mask(0).to_vector(), (std::vector<float>{1, 0, 1, 0, 0, 1}));
}

TEST(Embedding, BadSizesAreRefused) {
  EXPECT_THROW(layers::Embedding({.input_dim = 0, .output_dim = 2}), std::invalid_argument);
  EXPECT_THROW(layers::Embedding({.input_dim = 3, .output_dim = 0}), std::invalid_argument);
  const std::string m = message_of([] { layers::Embedding({.input_dim = (1 << 24) + 1, .output_dim = 1}); });
  EXPECT_NE(m.find("2^24"), std::string::npos) << m;
}

TEST(Embedding, ConfigHasKerasKeysAndDefaults) {
  layers::Embedding emb({.input_dim = 7, .output_dim = 3, .name = "emb"});
  testing::check_config_roundtrip(emb);
  const Config c = emb->get_config();
  EXPECT_EQ(c.at("input_dim").as_int(), 7);
  EXPECT_EQ(c.at("output_dim").as_int(), 3);
  EXPECT_FALSE(c.at("mask_zero").as_bool());
  const Config& init = c.at("embeddings_initializer");
  EXPECT_EQ(init.at("class_name").as_string(), "RandomUniform");
  EXPECT_DOUBLE_EQ(init.at("config").at("minval").as_double(), -0.05);
  EXPECT_DOUBLE_EQ(init.at("config").at("maxval").as_double(), 0.05);
  auto in = Input({2});
  emb(in);
  for (float v : emb->embeddings()->value.to_vector()) {
    EXPECT_GE(v, -0.05f);
    EXPECT_LE(v, 0.05f);
  }
}

// Embedding -> mean over the sequence -> Dense learns which half of the vocabulary a sequence is drawn from.
TEST(Embedding, TrainsWithFitOnInt32TokenIds) {
  set_random_seed(3);
  const Index n = 64, len = 6;
  std::vector<std::int32_t> tokens;
  std::vector<std::int32_t> classes;
  for (Index i = 0; i < n; ++i) {
    const std::int32_t label = static_cast<std::int32_t>(i % 2);
    classes.push_back(label);
    for (Index t = 0; t < len; ++t) tokens.push_back(label * 5 + static_cast<std::int32_t>((i * 3 + t) % 5));
  }
  const Tensor x = Tensor::from_vector(tokens, {n, len});
  const Tensor y = Tensor::from_vector(classes, {n});
  auto in = Input({len});
  auto h = layers::Embedding({.input_dim = 10, .output_dim = 8})(in);
  h = layers::Lambda([](const Tensor& e) { return ops::mean(e, {1}); })(h);
  Model model({in}, {layers::Dense({.units = 2, .activation = "softmax"})(h)});
  model.compile(optimizers::Adam(0.05), losses::SparseCategoricalCrossentropy());
  const callbacks::History hist = model.fit(x, y, {.epochs = 8, .batch_size = 16, .verbose = 0});
  EXPECT_LT(hist["loss"].back(), 0.5 * hist["loss"].front());
  const std::vector<float> p = model.predict(x).to_vector();
  for (Index i = 0; i < n; ++i) EXPECT_GT(p[2 * i + (i % 2)], 0.5f) << "sequence " << i;
}

// Both sequence layers go through a model file and predict the same.
TEST(Embedding, AModelWithEmbeddingAndLayerNormalizationSavesAndLoads) {
  set_random_seed(5);
  auto in = Input({4});
  auto h = layers::Embedding({.input_dim = 12, .output_dim = 6, .name = "emb"})(in);
  h = layers::LayerNormalization({.axis = {1, 2}, .epsilon = 1e-4f, .name = "ln"})(h);
  Model model({in}, {layers::Dense({.units = 3})(layers::Flatten()(h))});
  model.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  const Tensor x = ids(10, 4, 12);
  model.fit(x, testing::random_tensor({10, 3}, 2), {.epochs = 2, .batch_size = 5, .verbose = 0});
  const std::string path = ::testing::TempDir() + "embedding_layer_norm.tower";
  model.save(path);
  Model loaded = Model::load(path);
  EXPECT_EQ(loaded.predict(x).to_vector(), model.predict(x).to_vector());
  const Config ln = loaded->get_layer("ln")->get_config();
  EXPECT_EQ(ln.at("axis").as_list().size(), 2u);
  EXPECT_FLOAT_EQ(static_cast<float>(ln.at("epsilon").as_double()), 1e-4f);
  EXPECT_EQ(loaded->get_layer("emb")->get_config().at("input_dim").as_int(), 12);
}

}  // namespace
}  // namespace tower
