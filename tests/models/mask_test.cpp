// Keras' masks through whole models: tests/reference/masks/<case>.json, written by make_mask_fixtures.py (Keras 3 on
// TensorFlow), holds a functional model with Embedding(mask_zero=True) or Masking before recurrent layers, merges,
// Bidirectional and GlobalAveragePooling1D, padded inputs, targets, its weights, and what Keras computed: the
// predictions, the outputs' masks, evaluate()'s loss and metric (which skip the masked steps) and the loss's gradient
// with respect to every weight.
//
// MasksLikeKeras.Matches/<case> rebuilds the model from the fixture's config (so the masks are computed again from the
// layers, as Keras does on load), sets the weights and checks, on the CPU:
//   predictions and output masks   |tower - keras| <= 1e-5 + 1e-4 |keras|
//   test_on_batch's loss, metric   the same bound (Keras' evaluate on the one batch)
//   gradients                      one train_on_batch with SGD(learning_rate=1): w_before - w_after is the gradient,
//                                  |tower - keras| <= 1e-5 + 1e-3 |keras|
// MaskedTraining.LossesAndMetricsOnTheGpuMatchTheCpu_CUDA runs every case on cuda:0 against the same Keras values.
// The Masks.* tests cover what the fixtures do not: a layer that drops a mask, configs and files, bad masks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "testing/fixtures.h"
#include "tower/tower.h"

namespace tower {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> fixture_files() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(testing::reference_dir() / "masks", ec))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path().stem().string());
  std::sort(files.begin(), files.end());
  return files;
}

void expect_close(const Tensor& got, const Tensor& want, double atol, double rtol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const Tensor g = got.to(Device::cpu());
  const float* gp = g.data<float>();
  const float* wp = want.data<float>();
  for (Index i = 0; i < want.numel(); ++i)
    ASSERT_NEAR(gp[i], wp[i], atol + rtol * std::fabs(wp[i])) << what << " at flat index " << i;
}

double log_value(const callbacks::Logs& logs, const std::string& key) {
  const std::optional<double> v = logs.get(key);
  if (!v) throw std::runtime_error("no '" + key + "' in the logs");
  return *v;
}

// The one metric's value, whatever name Tower gives it.
double metric_value(const callbacks::Logs& logs) {
  for (const auto& [key, value] : logs.entries())
    if (key != "loss") return value;
  throw std::runtime_error("no metric in the logs");
}

struct Case {
  Config doc;
  Model model;
  Tensor x, y, sample_weight;
};

Case load_case(const std::string& name, Device device) {
  Config doc = testing::read_json_fixture("masks/" + name + ".json");
  Model model(model_from_config(doc.at("model")));
  const std::vector<VariablePtr> weights = model->weights();
  const auto& want = doc.at("weights").as_list();
  if (weights.size() != want.size())
    throw std::runtime_error(name + ": " + std::to_string(weights.size()) + " weights, the fixture has " +
                             std::to_string(want.size()));
  for (std::size_t k = 0; k < weights.size(); ++k) {
    const Tensor w = testing::fixture_tensor(want[k]);
    if (w.shape() != weights[k]->value.shape())
      throw std::runtime_error(name + ": weight " + weights[k]->path + " is " + weights[k]->value.shape().to_string() +
                               ", the fixture's " + want[k].at("name").as_string() + " " + w.shape().to_string());
    weights[k]->value.copy_from(w);
  }
  model.to(device);
  model.compile(optimizers::SGD(1.0), losses::loss_from_config(doc.at("loss")),
                {metrics::metric_from_config(doc.at("metrics").as_list().at(0))});
  Case c{doc, model, testing::fixture_tensor(doc.at("inputs").as_list().at(0)),
         testing::fixture_tensor(doc.at("targets").as_list().at(0)), Tensor()};
  if (doc.contains("sample_weight")) c.sample_weight = testing::fixture_tensor(doc.at("sample_weight"));
  return c;
}

void expect_like_keras(const std::string& name, Device device) {
  Case c = load_case(name, device);
  const Config& doc = c.doc;
  // Predictions and the output's mask.
  expect_close(c.model.predict(c.x), testing::fixture_tensor(doc.at("outputs").as_list().at(0)), 1e-5, 1e-4,
               name + ": predictions");
  const Config& mask = doc.at("output_masks").as_list().at(0);
  Plan& plan = c.model->plan_for(c.x.dim(0), false);
  plan.set_input(0, c.x.to(device));
  plan.forward();
  ASSERT_EQ(plan.output_mask(0).defined(), !mask.is_null()) << name << ": whether the output has a mask";
  if (!mask.is_null()) expect_close(plan.output_mask(0), testing::fixture_tensor(mask), 0, 0, name + ": output mask");

  // evaluate(): the masked mean loss and the masked metric.
  const callbacks::Logs eval = c.model.test_on_batch(c.x, c.y, c.sample_weight);
  const Config& keras_eval = doc.at("evaluate");
  const double keras_loss = keras_eval.at("loss").as_double();
  EXPECT_NEAR(log_value(eval, "loss"), keras_loss, 1e-5 + 1e-4 * std::fabs(keras_loss)) << name << ": loss";
  for (const auto& [key, value] : keras_eval.as_map())
    if (key != "loss")
      EXPECT_NEAR(metric_value(eval), value.as_double(), 1e-5 + 1e-4 * std::fabs(value.as_double()))
          << name << ": " << key;

  // The gradients, from one SGD step of learning rate 1.
  const std::vector<VariablePtr> weights = c.model->trainable_weights();
  std::vector<Tensor> before;
  for (const VariablePtr& v : weights) before.push_back(v->value.to(Device::cpu()).clone());
  c.model.train_on_batch(c.x, c.y, c.sample_weight);
  const auto& grads = doc.at("gradients").as_list();
  ASSERT_EQ(grads.size(), weights.size()) << name;
  for (std::size_t k = 0; k < weights.size(); ++k) {
    const Tensor after = weights[k]->value.to(Device::cpu());
    std::vector<float> g(static_cast<std::size_t>(after.numel()));
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = before[k].data<float>()[i] - after.data<float>()[i];
    expect_close(Tensor::from_vector(g, after.shape()), testing::fixture_tensor(grads[k]), 1e-5, 1e-3,
                 name + ": gradient of " + grads[k].at("name").as_string());
  }
}

class MasksLikeKeras : public ::testing::TestWithParam<std::string> {};

TEST_P(MasksLikeKeras, Matches) { expect_like_keras(GetParam(), Device::cpu()); }

INSTANTIATE_TEST_SUITE_P(, MasksLikeKeras, ::testing::ValuesIn(fixture_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MasksLikeKeras);

TEST(MasksLikeKerasFixtures, ArePresent) {
  EXPECT_GE(fixture_files().size(), 7u) << "tests/reference/masks: run tests/reference/make_mask_fixtures.py";
}

TEST(MaskedTraining, LossesAndMetricsOnTheGpuMatchTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  for (const std::string& name : fixture_files()) expect_like_keras(name, Device::cuda(0));
}

SymbolicTensor masked_ids(SymbolicTensor& ids) {
  ids = Input({5});
  return layers::Embedding({.input_dim = 10, .output_dim = 4, .mask_zero = true})(ids);
}

TEST(Masks, EmbeddingMaskZeroMasksIdZeroAndTheMaskFollowsLayersThatKeepIt) {
  SymbolicTensor ids;
  const SymbolicTensor e = masked_ids(ids);
  ASSERT_TRUE(e.mask().defined());
  EXPECT_EQ(e.mask().shape(), Shape({-1, 5}));
  const SymbolicTensor d = layers::Dense({.units = 3})(e);
  EXPECT_TRUE(d.mask() == e.mask());
  const SymbolicTensor seq = layers::LSTM({.units = 2, .return_sequences = true})(d);
  EXPECT_TRUE(seq.mask() == e.mask());
  EXPECT_FALSE(layers::LSTM({.units = 2})(d).mask().defined());
  EXPECT_FALSE(layers::Embedding({.input_dim = 10, .output_dim = 4})(ids).mask().defined());
}

TEST(Masks, ALayerThatDoesNotSupportMasksDropsItWithKerasWarning) {
  SymbolicTensor ids;
  const SymbolicTensor e = masked_ids(ids);
  ::testing::internal::CaptureStderr();
  const SymbolicTensor c = layers::Conv1D({.filters = 2, .kernel_size = 2})(e);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(c.mask().defined());
  EXPECT_NE(warning.find("does not support masking"), std::string::npos) << warning;
}

TEST(Masks, TheMasksNodesStayOutOfTheModelsLayersConfigAndSummary) {
  SymbolicTensor ids;
  const SymbolicTensor e = masked_ids(ids);
  Model model(ids, layers::Dense({.units = 2})(layers::LSTM({.units = 3, .return_sequences = true})(e)));
  EXPECT_EQ(model->layers().size(), 4u);  // input, embedding, lstm, dense
  const std::string config = model->get_config().to_json();
  EXPECT_EQ(config.find("Mask"), std::string::npos) << config;
  std::ostringstream summary;
  model->summary(summary);
  EXPECT_EQ(summary.str().find("Mask"), std::string::npos) << summary.str();
  // Rebuilt from its config, the model computes its masks again.
  Model again(model_from_config(model->serialize()));
  EXPECT_TRUE(again->outputs()[0].mask().defined());
}

TEST(Masks, AModelSavedAndLoadedPredictsTheSameWithItsMasks) {
  SymbolicTensor ids;
  const SymbolicTensor e = masked_ids(ids);
  set_random_seed(3);
  Model model(ids, layers::Dense({.units = 2})(layers::GRU({.units = 3})(e)));
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 0, 0, 0, 3, 4, 5, 6, 0}, {2, 5});
  const Tensor before = model.predict(x);
  const fs::path path = fs::temp_directory_path() / "tower_mask_model.tower";
  model.save(path.string());
  Model loaded = Model::load(path.string());
  fs::remove(path);
  EXPECT_EQ(loaded.predict(x).to_vector(), before.to_vector());
}

TEST(Masks, AModelCalledOnAMaskedTensorIsAClearError) {
  SymbolicTensor inner_in = Input({5, 4});
  Model inner(inner_in, layers::LSTM({.units = 2})(inner_in));
  SymbolicTensor ids;
  const SymbolicTensor e = masked_ids(ids);
  try {
    inner(e);
    FAIL() << "no error";
  } catch (const ShapeError& err) {
    EXPECT_NE(std::string(err.what()).find("mask"), std::string::npos) << err.what();
  }
}

// A layer whose compute_mask gives a mask that cannot belong to its output.
class BadMaskLayer : public CustomLayer {
 public:
  BadMaskLayer() : CustomLayer("BadMask", "") {}
  std::vector<Tensor> call(const std::vector<Tensor>& x, bool) override { return {x[0]}; }
  bool supports_masking() const override { return true; }
  std::vector<SymbolicTensor> compute_mask(const std::vector<SymbolicTensor>& in,
                                           const std::vector<SymbolicTensor>&) const override {
    return {mask_op("Wrong", {in[0]}, [](const std::vector<Tensor>& xs) {
      return ops::sum(xs[0], {1});  // [N, 4] for an output [N, 5, 4]: not its first dimensions
    })};
  }
  Config get_config() const override { return Config::map(); }
};

TEST(Masks, AMaskOfTheWrongShapeIsAClearError) {
  SymbolicTensor x = Input({5, 4});
  auto layer = std::make_shared<BadMaskLayer>();
  try {
    (*layer)(x);
    FAIL() << "no error";
  } catch (const ShapeError& err) {
    const std::string m = err.what();
    EXPECT_NE(m.find("mask of shape"), std::string::npos) << m;
    EXPECT_NE(m.find("BadMask"), std::string::npos) << m;
  }
}

// fit over a dataset: the masked loss decreases, and the padding a batch carries changes neither the loss nor the
// gradient (the same sequences with more padding train the same weights).
TEST(Masks, PaddingChangesNeitherTheLossNorTheTraining) {
  const auto train = [](Index length) {
    set_random_seed(4);
    SymbolicTensor ids = Input({length});
    SymbolicTensor h = layers::Embedding({.input_dim = 8, .output_dim = 4, .mask_zero = true})(ids);
    h = layers::LSTM({.units = 3, .return_sequences = true})(h);
    Model model(ids, layers::Dense({.units = 3, .activation = "softmax"})(h));
    model.compile(optimizers::Adam(0.01), losses::SparseCategoricalCrossentropy(),
                  {metrics::SparseCategoricalAccuracy()});
    std::vector<float> x(static_cast<std::size_t>(8 * length), 0.f), y(static_cast<std::size_t>(8 * length), 0.f);
    for (Index i = 0; i < 8; ++i)
      for (Index t = 0; t < 4; ++t) {
        x[static_cast<std::size_t>(i * length + t)] = static_cast<float>(1 + (i + t) % 7);
        y[static_cast<std::size_t>(i * length + t)] = static_cast<float>((i + t) % 3);
      }
    // Padded targets are anything: masked out.
    for (Index i = 0; i < 8; ++i)
      for (Index t = 4; t < length; ++t) y[static_cast<std::size_t>(i * length + t)] = 2.f;
    return model.fit(Tensor::from_vector(x, {8, length}), Tensor::from_vector(y, {8, length}),
                     {.epochs = 5, .batch_size = 4, .verbose = 0, .shuffle = false});
  };
  const callbacks::History a = train(4), b = train(7);
  ASSERT_EQ(a["loss"].size(), 5u);
  for (std::size_t e = 0; e < 5; ++e) {
    EXPECT_NEAR(a["loss"][e], b["loss"][e], 1e-5) << "epoch " << e;
    EXPECT_NEAR(a["sparse_categorical_accuracy"][e], b["sparse_categorical_accuracy"][e], 1e-6) << "epoch " << e;
  }
  EXPECT_LT(a["loss"].back(), a["loss"].front());
}

}  // namespace
}  // namespace tower
