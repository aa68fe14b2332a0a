// Layers written with tower::ops and no backward (CustomLayer): a squeeze-and-excitation block and a gated linear
// unit train exactly as the same computations built from Tower's own layers, from the same weights; they save,
// load by name and predict the same; and a call() that breaks its shapes says which layer did.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/engine/custom_layer.h"
#include "api/engine/layer_registry.h"
#include "api/ops/ops.h"
#include "api/tower/tower.h"
#include "testing/fixtures.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

struct SqueezeExciteOptions {
  int ratio = 2;
  std::string name;
  template <class V> void visit(V&& v) {
    v("ratio", ratio);
    v("name", name);
  }
};

// Keras' squeeze-and-excitation: the channel means, a bottleneck with ReLU, a sigmoid gate per channel.
class SqueezeExcite final : public CustomLayer {
 public:
  using Options = SqueezeExciteOptions;
  explicit SqueezeExcite(Options options) : CustomLayer("SqueezeExcite", options.name), options_(std::move(options)) {
    options_.name = name();
  }
  void build(const std::vector<Shape>& in) override {
    const Index c = in[0][-1];
    squeeze_ = add_weight("squeeze", {c, c / options_.ratio});
    excite_ = add_weight("excite", {c / options_.ratio, c});
  }
  std::vector<Tensor> call(const std::vector<Tensor>& x, bool) override {
    const Tensor s = ops::mean(x[0], {1, 2});  // [N, C]
    const Tensor gate = ops::sigmoid(ops::matmul(ops::relu(ops::matmul(s, squeeze_->value)), excite_->value));
    return {x[0] * ops::reshape(gate, Shape{gate.shape()[0], 1, 1, gate.shape()[1]})};
  }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
  VariablePtr squeeze_, excite_;
};
TOWER_REGISTER_LAYER(SqueezeExcite, "SqueezeExcite");

struct GatedDenseOptions {
  int units = 3;
  std::string name;
  template <class V> void visit(V&& v) {
    v("units", units);
    v("name", name);
  }
};

// A gated linear unit: (x W) * sigmoid(x V).
class GatedDense final : public CustomLayer {
 public:
  using Options = GatedDenseOptions;
  explicit GatedDense(Options options) : CustomLayer("GatedDense", options.name), options_(std::move(options)) {
    options_.name = name();
  }
  void build(const std::vector<Shape>& in) override {
    value_ = add_weight("value", {in[0][-1], options_.units});
    gate_ = add_weight("gate", {in[0][-1], options_.units});
  }
  std::vector<Tensor> call(const std::vector<Tensor>& x, bool) override {
    return {ops::matmul(x[0], value_->value) * ops::sigmoid(ops::matmul(x[0], gate_->value))};
  }
  Config get_config() const override { return options_to_config(options_); }

 private:
  Options options_;
  VariablePtr value_, gate_;
};
TOWER_REGISTER_LAYER(GatedDense, "GatedDense");

template <class L>
SymbolicTensor apply(typename L::Options options, const SymbolicTensor& x) {
  return (*std::make_shared<L>(std::move(options)))(x);
}

// Trains both models the same way and expects the same losses and weights, in the models' weight order.
void expect_same_training(Model& custom, Model& built_in, const Tensor& x, const Tensor& y) {
  ASSERT_EQ(custom.get_weights().size(), built_in.get_weights().size());
  custom.compile(optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9}), losses::SparseCategoricalCrossentropy());
  built_in.compile(optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9}), losses::SparseCategoricalCrossentropy());
  const callbacks::History a = custom.fit(x, y, {.epochs = 10, .batch_size = 8, .verbose = 0, .shuffle = false});
  const callbacks::History b = built_in.fit(x, y, {.epochs = 10, .batch_size = 8, .verbose = 0, .shuffle = false});
  for (std::size_t e = 0; e < a["loss"].size(); ++e) EXPECT_NEAR(a["loss"][e], b["loss"][e], 1e-5) << "epoch " << e;
  EXPECT_LT(a["loss"].back(), a["loss"].front());
  const std::vector<Tensor> wa = custom.get_weights(), wb = built_in.get_weights();
  for (std::size_t i = 0; i < wa.size(); ++i) {
    const std::vector<float> va = wa[i].to_vector(), vb = wb[i].to_vector();
    ASSERT_EQ(va.size(), vb.size()) << i;
    for (std::size_t j = 0; j < va.size(); ++j) EXPECT_NEAR(va[j], vb[j], 1e-5) << "weight " << i << ", " << j;
  }
}

Tensor labels(Index n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 3);
  return Tensor::from_vector(v, Shape{n});
}

TEST(CustomLayer, ASqueezeExciteWrittenWithOpsTrainsAsTheSameBuiltFromLayers) {
  const Tensor x = testing::random_tensor({16, 5, 5, 4}, 1);
  auto in_a = Input({5, 5, 4});
  auto conv = layers::Conv2D({.filters = 4, .kernel_size = {3, 3}, .activation = "relu"});
  auto dense = layers::Dense({.units = 3, .activation = "softmax"});
  auto se = apply<SqueezeExcite>({.ratio = 2}, conv(in_a));
  Model custom({in_a}, {dense(layers::Flatten()(se))});

  auto in_b = Input({5, 5, 4});
  auto conv_b = layers::Conv2D({.filters = 4, .kernel_size = {3, 3}, .activation = "relu"});
  auto features = conv_b(in_b);
  auto s = layers::GlobalAveragePooling2D()(features);
  auto squeezed = layers::Dense({.units = 2, .activation = "relu", .use_bias = false})(s);
  auto gate = layers::Dense({.units = 4, .activation = "sigmoid", .use_bias = false})(squeezed);
  auto scaled = layers::Multiply()(std::vector<SymbolicTensor>{features, gate});
  Model built_in({in_b}, {layers::Dense({.units = 3, .activation = "softmax"})(layers::Flatten()(scaled))});
  built_in.set_weights(custom.get_weights());
  expect_same_training(custom, built_in, x, labels(16));
}

TEST(CustomLayer, AGatedLinearUnitWrittenWithOpsTrainsAsTheSameBuiltFromLayers) {
  const Tensor x = testing::random_tensor({16, 6}, 2);
  auto in_a = Input({6});
  Model custom({in_a}, {layers::Dense({.units = 3, .activation = "softmax"})(apply<GatedDense>({.units = 4}, in_a))});
  auto in_b = Input({6});
  auto value = layers::Dense({.units = 4, .use_bias = false})(in_b);
  auto gate = layers::Dense({.units = 4, .activation = "sigmoid", .use_bias = false})(in_b);
  auto glu = layers::Multiply()(std::vector<SymbolicTensor>{value, gate});
  Model built_in({in_b}, {layers::Dense({.units = 3, .activation = "softmax"})(glu)});
  built_in.set_weights(custom.get_weights());
  expect_same_training(custom, built_in, x, labels(16));
}

// Keras 3 with the same layers written in keras.ops (tests/reference/make_custom_layer_fixtures.py): from the same
// weights, 10 SGD steps give Keras' epoch losses and weights.
TEST(CustomLayer, TrainsAsKerasWithTheSameLayerWrittenInKerasOps) {
  const Config doc = testing::read_json_fixture("models/custom_layers.json");
  for (const std::string& name : {std::string("squeeze_excite"), std::string("gated_dense")}) {
    SCOPED_TRACE(name);
    const Config& c = testing::fixture_case(doc, name);
    Model model = [&] {
      if (name == "squeeze_excite") {
        auto in = Input({5, 5, 4});
        auto h = layers::Conv2D({.filters = 4, .kernel_size = {3, 3}, .activation = "relu"})(in);
        h = apply<SqueezeExcite>({.ratio = 2}, h);
        return Model({in}, {layers::Dense({.units = 3, .activation = "softmax"})(layers::Flatten()(h))});
      }
      auto in = Input({6});
      return Model({in}, {layers::Dense({.units = 3, .activation = "softmax"})(apply<GatedDense>({.units = 4}, in))});
    }();
    std::vector<Tensor> initial;
    for (const Config& w : c.at("initial_weights").as_list()) initial.push_back(testing::fixture_tensor(w));
    model.set_weights(initial);
    model.compile(optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9}), losses::SparseCategoricalCrossentropy());
    const callbacks::History h = model.fit(testing::fixture_tensor(c.at("x")), testing::fixture_tensor(c.at("y")),
                                           {.epochs = 5, .batch_size = 8, .verbose = 0, .shuffle = false});
    const Config& losses = c.at("losses");
    ASSERT_EQ(h["loss"].size(), losses.as_list().size());
    for (std::size_t e = 0; e < h["loss"].size(); ++e)
      EXPECT_NEAR(h["loss"][e], losses.as_list()[e].as_double(), 1e-5) << "epoch " << e;
    const std::vector<Tensor> trained = model.get_weights();
    const auto& want = c.at("final_weights").as_list();
    ASSERT_EQ(trained.size(), want.size());
    for (std::size_t i = 0; i < trained.size(); ++i) {
      const std::vector<float> got = trained[i].to_vector(), expected = testing::fixture_tensor(want[i]).to_vector();
      ASSERT_EQ(got.size(), expected.size()) << "weight " << i;
      for (std::size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], expected[j], 1e-5) << "weight " << i << ", " << j;
    }
  }
}

TEST(CustomLayer, SavesLoadsByNameAndPredictsTheSame) {
  auto in = Input({5, 5, 4});
  Model model({in}, {layers::GlobalAveragePooling2D()(apply<SqueezeExcite>({.ratio = 4, .name = "se"}, in))});
  Model copy(model_from_config(model->serialize()));
  copy.set_weights(model.get_weights());
  const Tensor x = testing::random_tensor({3, 5, 5, 4}, 3);
  EXPECT_EQ(copy.predict(x).to_vector(), model.predict(x).to_vector());
  EXPECT_EQ(copy->get_layer("se")->get_config().at("ratio").as_int(), 4);
}

// A model with a registered CustomLayer goes through a file (Model::save / load) and trains under MirroredStrategy,
// whose replicas are rebuilt from the model's config, as on one replica.
TEST(CustomLayer, SavesToAFileAndTrainsUnderMirroredStrategyAsOnOneReplica) {
  set_random_seed(14);
  const auto make = [] {
    auto in = Input({5, 5, 4});
    auto se = apply<SqueezeExcite>({.ratio = 2, .name = "se"}, layers::Conv2D({.filters = 4, .kernel_size = 3})(in));
    return Model({in}, {layers::Dense({.units = 3, .activation = "softmax"})(layers::Flatten()(se))});
  };
  Model single = make();
  const std::string path = ::testing::TempDir() + "custom_layer_model.tower";
  single.save(path);
  Model loaded = Model::load(path);
  const Tensor x = testing::random_tensor({16, 5, 5, 4}, 4);
  EXPECT_EQ(loaded.predict(x).to_vector(), single.predict(x).to_vector());

  distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  std::optional<Model> mirrored;
  {
    const distribute::StrategyScope scope = strategy.scope();
    mirrored.emplace(make());
    mirrored->compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy());
  }
  mirrored->set_weights(single.get_weights());
  single.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy());
  const auto data = data::Dataset::from_tensor_slices({x, labels(16)}).batch(8);
  const callbacks::History a = single.fit(data, {.epochs = 3, .verbose = 0});
  const callbacks::History b = mirrored->fit(data, {.epochs = 3, .verbose = 0});
  for (std::size_t e = 0; e < a["loss"].size(); ++e) EXPECT_NEAR(b["loss"][e], a["loss"][e], 1e-5) << e;
  const std::vector<Tensor> wa = single.get_weights(), wb = mirrored->get_weights();
  for (std::size_t i = 0; i < wa.size(); ++i) {
    const std::vector<float> va = wa[i].to_vector(), vb = wb[i].to_vector();
    for (std::size_t j = 0; j < va.size(); ++j) EXPECT_NEAR(vb[j], va[j], 1e-5) << "weight " << i << ", " << j;
  }
  EXPECT_LT(a["loss"].back(), a["loss"].front());
}

TEST(CustomLayer, ACallThatFailsOnItsShapesNamesTheLayer) {
  auto in = Input({5});
  try {
    apply<SqueezeExcite>({.name = "bad_se"}, in);  // a rank-2 input has no axes 1 and 2 to average
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'bad_se'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ops.mean"), std::string::npos) << msg;
  }
}

// A layer whose first call failed is not left half-built: called on shapes it takes, it builds afresh (weights for
// those shapes) and trains. So is one whose build() throws.
TEST(CustomLayer, ALayerWhoseFirstCallFailedBuildsAgain) {
  auto se = std::make_shared<SqueezeExcite>(SqueezeExcite::Options{.ratio = 2, .name = "se_again"});
  EXPECT_THROW((*se)(Input({6})), ShapeError);  // built for [6], which its call cannot average over
  EXPECT_FALSE(se->built());
  EXPECT_TRUE(se->weights().empty());
  auto in = Input({3, 3, 4});
  Model model({in}, {layers::Dense({.units = 3, .activation = "softmax"})(layers::Flatten()((*se)(in)))});
  ASSERT_EQ(se->weights().size(), 2u);
  EXPECT_EQ(se->weights()[0]->value.shape(), (Shape{4, 2}));
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
  const callbacks::History h = model.fit(testing::random_tensor({8, 3, 3, 4}, 6), labels(8), {.epochs = 3, .verbose = 0});
  EXPECT_LT(h["loss"].back(), h["loss"].front());

  struct FailingBuild final : CustomLayer {
    FailingBuild() : CustomLayer("FailingBuild", "failing_build") {}
    bool fail = true;
    void build(const std::vector<Shape>& in) override {
      add_weight("w", {in[0][-1], 2});
      if (fail) throw std::invalid_argument("no");
    }
    std::vector<Tensor> call(const std::vector<Tensor>& x, bool) override { return {ops::matmul(x[0], weights()[0]->value)}; }
    Config get_config() const override { return {}; }
  };
  auto failing = std::make_shared<FailingBuild>();
  EXPECT_THROW((*failing)(Input({3})), std::invalid_argument);
  EXPECT_TRUE(failing->weights().empty());
  failing->fail = false;
  EXPECT_EQ((*failing)(Input({5})).shape(), (Shape{-1, 2}));
  EXPECT_EQ(failing->weights().size(), 1u);
}

// A Lambda of ops trains as the same function written as layers, and refuses to be saved, naming itself.
TEST(CustomLayer, ALambdaOfOpsTrainsAndRefusesAConfig) {
  const Tensor x = testing::random_tensor({16, 6}, 4);
  auto in_a = Input({6});
  auto dense_a = layers::Dense({.units = 4})(in_a);
  auto half_tanh = layers::Lambda([](const Tensor& t) { return ops::tanh(t) * 0.5f; }, "half_tanh")(dense_a);
  Model custom({in_a}, {layers::Dense({.units = 3, .activation = "softmax"})(half_tanh)});
  auto in_b = Input({6});
  auto dense_b = layers::Dense({.units = 4, .activation = "tanh"})(in_b);
  auto halved = layers::Rescaling({.scale = 0.5})(dense_b);
  Model built_in({in_b}, {layers::Dense({.units = 3, .activation = "softmax"})(halved)});
  built_in.set_weights(custom.get_weights());
  expect_same_training(custom, built_in, x, labels(16));
  try {
    custom->serialize();
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("'half_tanh' (Lambda)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tower
