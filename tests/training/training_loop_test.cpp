// fit, evaluate and predict run through one epoch driver and one step driver (api/training/training_loop.h):
// the same staging of inputs, the same batch hooks per mode, the same stop at `steps`.
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

}  // namespace
}  // namespace tower
