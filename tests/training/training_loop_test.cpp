// fit, evaluate and predict run through one epoch driver and one step driver (api/training/training_loop.h):
// the same staging of inputs, the same batch hooks per mode, the same stop at `steps`. What Keras' loop does
// around the steps (class and sample weights, steps_per_epoch, initial_epoch, on_train_end's logs, a model
// without trainable weights) is compared with tests/reference/training/loop.json, written by
// tests/reference/make_training_loop_fixtures.py with Keras itself.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/fixtures.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

Sequential small_model() {
  return Sequential({InputLayer({.shape = {4}}), layers::Dense({.units = 3, .activation = "softmax"})});
}

Tensor inputs(Index n) {
  std::vector<float> v(static_cast<std::size_t>(n * 4));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
  return Tensor::from_vector(v, {n, 4});
}

// Records the hooks it sees, as "<hook>:<batch>".
class Recorder : public callbacks::Callback {
 public:
  std::vector<std::string> seen;
  void on_train_batch_begin(std::int64_t b, const callbacks::Logs&) override { add("train_begin", b); }
  void on_train_batch_end(std::int64_t b, const callbacks::Logs& l) override { add("train_end", b, l); }
  void on_test_batch_begin(std::int64_t b, const callbacks::Logs&) override { add("test_begin", b); }
  void on_test_batch_end(std::int64_t b, const callbacks::Logs& l) override { add("test_end", b, l); }
  void on_predict_batch_begin(std::int64_t b, const callbacks::Logs&) override { add("predict_begin", b); }
  void on_predict_batch_end(std::int64_t b, const callbacks::Logs& l) override { add("predict_end", b, l); }

 private:
  void add(const char* hook, std::int64_t b, const callbacks::Logs& l = {}) {
    std::string s = std::string(hook) + ":" + std::to_string(b);
    if (auto size = l.get("size")) s += ":" + std::to_string(static_cast<int>(*size));
    seen.push_back(s);
  }
};

TEST(TrainingLoop, PredictRunsBeforeCompileAndConcatenatesBatches) {
  Sequential model = small_model();
  const Tensor x = inputs(10);
  const Tensor all = model.predict(x, {.batch_size = 4});
  ASSERT_EQ(all.shape(), Shape({10, 3}));
  // Row by row, the batched predictions equal one batch of everything.
  const Tensor one = model.predict(x, {.batch_size = 10});
  EXPECT_EQ(all.to_vector(), one.to_vector());
  EXPECT_FALSE(model->compiled());
  EXPECT_EQ(model.optimizer(), nullptr);
}

TEST(TrainingLoop, PredictStagesIntegerInputsLikeFit) {
  Sequential model = small_model();
  std::vector<std::int32_t> ints = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> floats(ints.begin(), ints.end());
  const Tensor as_int = Tensor::from_vector(ints, {2, 4});
  const Tensor as_float = Tensor::from_vector(floats, {2, 4});
  EXPECT_EQ(model.predict(as_int).to_vector(), model.predict(as_float).to_vector());
}

TEST(TrainingLoop, EachModeCallsItsOwnBatchHooks) {
  Sequential model = small_model();
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
  const Tensor x = inputs(6);
  const Tensor y = Tensor::from_vector(std::vector<std::int32_t>{0, 1, 2, 0, 1, 2}, {6});
  auto rec = std::make_shared<Recorder>();
  model.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0, .callbacks = {rec}, .shuffle = false});
  EXPECT_EQ(rec->seen, (std::vector<std::string>{"train_begin:0", "train_end:0:4", "train_begin:1", "train_end:1:2"}));
  rec->seen.clear();
  model.evaluate(x, y, {.batch_size = 4, .verbose = 0, .callbacks = {rec}});
  EXPECT_EQ(rec->seen, (std::vector<std::string>{"test_begin:0", "test_end:0:4", "test_begin:1", "test_end:1:2"}));
  rec->seen.clear();
  model.predict(x, {.batch_size = 4, .steps = 1, .callbacks = {rec}});
  EXPECT_EQ(rec->seen, (std::vector<std::string>{"predict_begin:0", "predict_end:0"}));
}

TEST(TrainingLoop, PredictWithStepsStopsEarly) {
  Sequential model = small_model();
  const Tensor p = model.predict(inputs(10), {.batch_size = 4, .steps = 2});
  EXPECT_EQ(p.shape(), Shape({8, 3}));
}

TEST(TrainingLoop, EvaluateAndTrainOnBatchNeedCompile) {
  Sequential model = small_model();
  const Tensor x = inputs(2);
  const Tensor y = Tensor::from_vector(std::vector<std::int32_t>{0, 1}, {2});
  for (auto call : {+[](Sequential& m, const Tensor& a, const Tensor& b) { m.evaluate(a, b, {.verbose = 0}); },
                    +[](Sequential& m, const Tensor& a, const Tensor& b) { m.train_on_batch(a, b); },
                    +[](Sequential& m, const Tensor& a, const Tensor& b) { m.test_on_batch(a, b); }}) {
    try {
      call(model, x, y);
      FAIL() << "expected std::logic_error";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("call compile() first"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("Model 'sequential"), std::string::npos) << e.what();
    }
  }
}

TEST(TrainingLoop, APredictBatchWithTooFewComponentsNamesTheModel) {
  auto x = Input({4});
  auto y = Input({4});
  Model two({x, y}, {layers::Add()({x, y})}, "two_inputs");
  try {
    two.predict(data::Dataset::from_tensor_slices({inputs(2)}).batch(2));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Model 'two_inputs': a batch has 1 components; expected 2 input(s)"),
              std::string::npos)
        << e.what();
  }
}

// A metric that counts how often its value is read.
class CountingAccuracy : public metrics::Metric {
 public:
  explicit CountingAccuracy(int* reads)
      : Metric("SparseCategoricalAccuracy", "accuracy"), inner_(metrics::SparseCategoricalAccuracy()), reads_(reads) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& w) override {
    inner_->update_state(y_true, y_pred, w);
  }
  double result() const override {
    ++*reads_;
    return inner_->result();
  }
  void reset_state() override { inner_->reset_state(); }
  void merge_state(const Metric& other) override { inner_->merge_state(other); }
  std::shared_ptr<Metric> clone() const override { return std::make_shared<CountingAccuracy>(reads_); }
  Config get_config() const override { return inner_->get_config(); }

 private:
  metrics::MetricPtr inner_;
  int* reads_;
};

// Reads a batch's "loss" in on_train_batch_end.
class LossReader : public callbacks::Callback {
 public:
  std::vector<double> losses;
  void on_train_batch_end(std::int64_t, const callbacks::Logs& l) override { losses.push_back(*l.get("loss")); }
};

// The batch logs are read from the device only when a callback looks at them: "size" alone (the Recorder) reads
// nothing, so an epoch of three batches reads the metric once, for the epoch's logs; a callback that reads the
// loss makes every batch read, and sees the running values.
TEST(TrainingLoop, BatchLogsAreReadOnlyWhenACallbackLooksAtThem) {
  Sequential model = small_model();
  int reads = 0;
  model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy(),
                {std::make_shared<CountingAccuracy>(&reads)});
  const Tensor x = inputs(12);
  const Tensor y = Tensor::from_vector(std::vector<std::int32_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}, {12});
  auto rec = std::make_shared<Recorder>();
  model.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0, .callbacks = {rec}, .shuffle = false});
  EXPECT_EQ(rec->seen.size(), 6u);
  EXPECT_EQ(reads, 1);
  reads = 0;
  auto reader = std::make_shared<LossReader>();
  const callbacks::History h2 =
      model.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0, .callbacks = {reader}, .shuffle = false});
  EXPECT_EQ(reads, 4);
  ASSERT_EQ(reader->losses.size(), 3u);
  EXPECT_DOUBLE_EQ(reader->losses.back(), h2["loss"].back());
}

TEST(TrainingLoop, DeferredLogsComputeOnceWhenLookedAtAndCopiesHoldTheValues) {
  int computed = 0;
  callbacks::Logs logs;
  logs.defer([&] {
    ++computed;
    callbacks::Logs v;
    v.set("loss", 0.5);
    v.set("size", 99);  // an entry set on the logs themselves wins
    return v;
  });
  logs.set("size", 4);
  EXPECT_TRUE(logs.deferred());
  EXPECT_EQ(logs.get("size"), 4.0);
  EXPECT_EQ(computed, 0);
  const callbacks::Logs copy = logs;  // a copy reads the values
  EXPECT_EQ(computed, 1);
  EXPECT_FALSE(logs.deferred());
  EXPECT_EQ(copy.get("loss"), 0.5);
  EXPECT_EQ(logs.get("loss"), 0.5);
  ASSERT_EQ(logs.entries().size(), 2u);
  EXPECT_EQ(logs.entries()[0].first, "loss");  // deferred values first, in Keras' order
  EXPECT_EQ(logs.entries()[1], (std::pair<std::string, double>{"size", 4.0}));
  EXPECT_EQ(computed, 1);
  EXPECT_FALSE(logs.contains("accuracy"));
}

TEST(TrainingLoop, MetricsOfTwoOutputsOfOneSharedLayerKeepKerasNames) {
  // Keras names both outputs after the layer ("shared"); its metrics get unique names ("shared_mae",
  // "shared_mae_1"), while the per-output losses share "shared_loss" (tests/reference/models/shared_outputs.json,
  // from tests/reference/make_model_fixtures.py).
  const Config keras = testing::read_json_fixture("models/shared_outputs.json");
  auto x = Input({3}, "x");
  layers::Dense shared({.units = 2, .name = "shared"});
  layers::Dense pre({.units = 3, .name = "pre"});
  Model model({x}, {shared(x), shared(pre(x))});
  shared->weights()[0]->value.copy_from(Tensor::full({3, 2}, 1.f));
  pre->weights()[0]->value.copy_from(Tensor::zeros({3, 3}));
  const auto mae = [] { return metrics::metric_from_config(Config("mae")); };
  model.compile(optimizers::SGD(0.0), {losses::MeanSquaredError(), losses::MeanAbsoluteError()}, {{mae()}, {mae()}});
  const data::Dataset ds =
      data::Dataset::from_tensor_slices({Tensor::full({4, 3}, 1.f), Tensor::zeros({4, 2}), Tensor::zeros({4, 2})}).batch(4);
  const callbacks::Logs logs = model.evaluate(ds, {.verbose = 0});
  // Tower's MeanAbsoluteError is named as Keras' class ("mean_absolute_error"), Keras' "mae" string keeps "mae".
  const std::string name = mae()->name();
  for (const auto& [key, value] : keras.at("logs").as_map()) {
    std::string ours = key;
    if (const auto at = ours.find("mae"); at != std::string::npos) ours.replace(at, 3, name);
    ASSERT_TRUE(logs.get(ours)) << ours;
    EXPECT_NEAR(*logs.get(ours), value.as_double(), 1e-6) << ours;
  }
}

TEST(TrainingLoop, TwoMetricsOfOneNameGetKerasUniqueNames) {
  // Keras: compile(metrics=["mae", "mae"]) logs "mae" and "mae_1".
  Sequential model({InputLayer({.shape = {4}}), layers::Dense({.units = 1})});
  const auto mae = [] { return metrics::metric_from_config(Config("mae")); };
  model.compile(optimizers::SGD(0.0), losses::MeanSquaredError(), {mae(), mae()});
  const std::string name = mae()->name();
  const callbacks::Logs logs = model.evaluate(inputs(4), Tensor::zeros({4, 1}), {.verbose = 0});
  ASSERT_TRUE(logs.get(name + "_1")) << name;
  EXPECT_EQ(*logs.get(name), *logs.get(name + "_1"));
}

const Config& loop_case(const std::string& name) {
  static const Config doc = testing::read_json_fixture("training/loop.json");
  return testing::fixture_case(doc, name);
}

void expect_logs_near(const callbacks::Logs& logs, const Config& keras, const std::string& what) {
  for (const auto& [key, value] : keras.as_map()) {
    ASSERT_TRUE(logs.contains(key)) << what << ": no '" << key << "'";
    EXPECT_NEAR(*logs.get(key), value.as_double(), 1e-5 * (1 + std::abs(value.as_double()))) << what << ": " << key;
  }
  EXPECT_EQ(logs.entries().size(), keras.size()) << what;
}

void expect_history_near(const callbacks::History& h, const Config& keras, const std::string& what) {
  for (const auto& [key, values] : keras.as_map()) {
    ASSERT_TRUE(h.contains(key)) << what << ": no '" << key << "'";
    const std::vector<double>& got = h[key];
    ASSERT_EQ(got.size(), values.size()) << what << ": " << key;
    for (std::size_t e = 0; e < got.size(); ++e)
      EXPECT_NEAR(got[e], values.as_list()[e].as_double(), 1e-5 * (1 + std::abs(got[e]))) << what << ": " << key;
  }
  EXPECT_EQ(h.keys().size(), keras.size()) << what;
}

Sequential dense_from(const Config& c, int units, const std::string& activation) {
  const Tensor kernel = testing::fixture_tensor(c.at("kernel"));
  Sequential model({InputLayer({.shape = {kernel.dim(0)}}), layers::Dense({.units = units, .activation = activation})});
  model.set_weights({kernel, testing::fixture_tensor(c.at("bias"))});
  return model;
}

// Keras weighs the training batches of fit(..., class_weight) only: the validation inside that fit and every later
// evaluate see unweighted losses.
TEST(TrainingLoop, ClassWeightWeighsTrainingBatchesOnly) {
  const Config& c = loop_case("class_weight");
  Sequential model = dense_from(c, 3, "softmax");
  model.compile(optimizers::SGD(0.0), losses::SparseCategoricalCrossentropy());
  const Tensor x = testing::fixture_tensor(c.at("x")), y = testing::fixture_tensor(c.at("y"));
  expect_logs_near(model.evaluate(x, y, {.verbose = 0}), c.at("evaluate_before"), "evaluate before fit");
  const callbacks::History h =
      model.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0,
                       .validation_data = data::Dataset::from_tensor_slices({x, y}).batch(32), .shuffle = false,
                       .class_weight = {{0, 10.0}}});
  expect_history_near(h, c.at("history"), "fit");
  expect_logs_near(model.evaluate(x, y, {.verbose = 0}), c.at("evaluate_after"), "evaluate after fit");
}

// Compiled metrics (compile's `metrics`) take no sample weights (Keras).
TEST(TrainingLoop, CompiledMetricsIgnoreSampleWeights) {
  const Config& c = loop_case("weighted_metrics");
  Sequential model = dense_from(c, 1, "sigmoid");
  model.compile(optimizers::SGD(0.0), losses::BinaryCrossentropy(), {metrics::BinaryAccuracy()});
  const Tensor x = testing::fixture_tensor(c.at("x")), y = testing::fixture_tensor(c.at("y"));
  const Tensor w = testing::fixture_tensor(c.at("sample_weight"));
  const callbacks::Logs logs =
      model.evaluate(data::Dataset::from_tensor_slices({x, y, w}).batch(8), {.verbose = 0});
  EXPECT_NEAR(*logs.get("binary_accuracy"), c.at("evaluate").at("binary_accuracy").as_double(), 1e-6);
  EXPECT_NEAR(*logs.get("loss"), c.at("evaluate").at("loss").as_double(), 1e-5);
}

// Keras passes sample weights (and fit's class weights) to weighted_metrics only; a weighted metric named like an
// unweighted one is logged as "weighted_<name>".
TEST(TrainingLoop, OnlyWeightedMetricsTakeSampleWeights) {
  const Config& c = loop_case("weighted_metrics");
  Sequential model = dense_from(c, 1, "sigmoid");
  model.compile(optimizers::SGD(0.0), losses::BinaryCrossentropy(), {metrics::BinaryAccuracy()},
                {metrics::BinaryAccuracy()});
  const Tensor x = testing::fixture_tensor(c.at("x")), y = testing::fixture_tensor(c.at("y"));
  const Tensor w = testing::fixture_tensor(c.at("sample_weight"));
  expect_logs_near(model.evaluate(data::Dataset::from_tensor_slices({x, y, w}).batch(8), {.verbose = 0}),
                   c.at("evaluate"), "evaluate with sample weights");
  const callbacks::History h =
      model.fit(x, y, {.epochs = 1, .batch_size = 8, .verbose = 0, .shuffle = false, .class_weight = {{0, 3.0}}});
  expect_history_near(h, c.at("fit_history"), "fit with class weights");
  // A custom step's update_metrics weighs the same way.
  model->training_loop().reset_metrics();
  model->training_loop().update_metrics({y}, {model.predict(x)}, w);
  const callbacks::Logs logs = model->training_loop().logs();
  EXPECT_NEAR(*logs.get("binary_accuracy"), c.at("evaluate").at("binary_accuracy").as_double(), 1e-6);
  EXPECT_NEAR(*logs.get("weighted_binary_accuracy"), c.at("evaluate").at("weighted_binary_accuracy").as_double(),
              1e-6);
}

// Counts the training batches of each epoch, and keeps what on_epoch_end and on_train_end received.
class EpochBatchCounter : public callbacks::Callback {
 public:
  std::vector<std::int64_t> batches;
  callbacks::Logs last_epoch_logs, train_end_logs;
  bool train_ended = false;
  void on_epoch_begin(int, const callbacks::Logs&) override { batches.push_back(0); }
  void on_train_batch_end(std::int64_t, const callbacks::Logs&) override { ++batches.back(); }
  void on_epoch_end(int, const callbacks::Logs& l) override { last_epoch_logs = l; }
  void on_train_end(const callbacks::Logs& l) override {
    train_ended = true;
    train_end_logs = l;
  }
};

// Keras' EpochIterator: with steps_per_epoch the pass over a finite dataset carries over between epochs, an epoch
// ends early when the pass ends (known cardinality: after that many batches of the pass), and the next epoch
// starts a new pass.
TEST(TrainingLoop, StepsPerEpochFollowsKerasEpochIterator) {
  const Config doc = testing::read_json_fixture("training/loop.json");
  int cases = 0;
  for (const std::string& name : testing::fixture_case_names(doc)) {
    if (name.rfind("steps_per_epoch_", 0) != 0) continue;
    ++cases;
    const Config& c = testing::fixture_case(doc, name);
    const Index n = c.at("examples").as_int();
    std::vector<float> v(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i);
    const Tensor x = Tensor::from_vector(v, {n, 1}), y = Tensor::zeros({n, 1});
    data::Dataset ds = data::Dataset::from_tensor_slices({x, y});
    if (c.at("cardinality").as_string() == "unknown")
      ds = data::Dataset::from_generator([ds] {
        std::shared_ptr<data::Iterator> it = ds.make_iterator();
        return data::Dataset::GeneratorFn([it] { return it->next(); });
      });
    ds = ds.batch(c.at("batch_size").as_int());
    Sequential model({InputLayer({.shape = {1}}), layers::Dense({.units = 1})});
    model.compile(optimizers::SGD(0.0), losses::MeanSquaredError());
    auto counter = std::make_shared<EpochBatchCounter>();
    model.fit(ds, {.epochs = static_cast<int>(c.at("epochs").as_int()), .verbose = 0, .callbacks = {counter},
                   .steps_per_epoch = c.at("steps_per_epoch").as_int()});
    std::vector<std::int64_t> keras;
    for (const Config& b : c.at("batches").as_list()) keras.push_back(b.as_int());
    EXPECT_EQ(counter->batches, keras) << name;
  }
  EXPECT_EQ(cases, 8);
}

TEST(TrainingLoop, InitialEpochPastEpochsRunsNoEpoch) {
  const Config& c = loop_case("initial_epoch");
  Sequential model({InputLayer({.shape = {1}}), layers::Dense({.units = 1})});
  model.compile(optimizers::SGD(0.0), losses::MeanSquaredError());
  auto counter = std::make_shared<EpochBatchCounter>();
  const callbacks::History h = model.fit(inputs(10).slice(0, 10), Tensor::zeros({10, 1}),
                                         {.epochs = 2, .verbose = 0, .callbacks = {counter}, .initial_epoch = 3});
  EXPECT_EQ(h.keys().size(), c.at("history").size());
  EXPECT_EQ(h.epoch().size(), c.at("epochs").size());
  EXPECT_TRUE(counter->batches.empty());
  EXPECT_TRUE(counter->train_ended);
  EXPECT_EQ(counter->train_end_logs.entries().size(), c.at("train_end_logs").size());
}

// on_train_end receives the last epoch's logs, the validation's included.
TEST(TrainingLoop, OnTrainEndGetsTheLastEpochLogs) {
  const Config& c = loop_case("train_end_logs");
  Sequential model({InputLayer({.shape = {1}}), layers::Dense({.units = 1})});
  model.set_weights({Tensor::from_vector(std::vector<float>{0.5f}, {1, 1}), Tensor::from_vector(std::vector<float>{0.25f}, {1})});
  model.compile(optimizers::SGD(0.0), losses::MeanSquaredError());
  const Tensor x = testing::fixture_tensor(c.at("x")), y = testing::fixture_tensor(c.at("y"));
  auto counter = std::make_shared<EpochBatchCounter>();
  model.fit(x, y, {.epochs = 2, .verbose = 0, .callbacks = {counter},
                   .validation_data = data::Dataset::from_tensor_slices({x, y}).batch(32)});
  expect_logs_near(counter->train_end_logs, c.at("train_end_logs"), "on_train_end");
  expect_logs_near(counter->last_epoch_logs, c.at("last_epoch_logs"), "the last on_epoch_end");
}

// Keras warns and trains a model without trainable weights: the loss is computed, BatchNormalization's moving
// statistics move, the optimizer makes no step.
TEST(TrainingLoop, AModelWithoutTrainableWeightsTrains) {
  const Config& c = loop_case("no_trainable");
  Sequential model({InputLayer({.shape = {3}}), layers::BatchNormalization({.center = false, .scale = false})});
  model.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  ASSERT_TRUE(model.trainable_weights().empty());
  const Tensor x = testing::fixture_tensor(c.at("x")), y = testing::fixture_tensor(c.at("y"));
  const callbacks::History h = model.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0, .shuffle = false});
  expect_history_near(h, c.at("history"), "fit");
  EXPECT_EQ(model.optimizer()->iterations(), c.at("iterations").as_int());
  const std::vector<Tensor> w = model.get_weights();
  ASSERT_EQ(w.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const std::vector<float> got = w[static_cast<std::size_t>(k)].to_vector();
    const std::vector<float> want = testing::fixture_tensor(c.at(k == 0 ? "moving_mean" : "moving_variance")).to_vector();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << k << " " << i;
  }
}

}  // namespace
}  // namespace tower
