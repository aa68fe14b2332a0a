// fit, evaluate and predict run through one epoch driver and one step driver (api/training/training_loop.h):
// the same staging of inputs, the same batch hooks per mode, the same stop at `steps`.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
}  // namespace tower
