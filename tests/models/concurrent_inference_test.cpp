// One model called from many threads at once: predict, predict_on_batch and model(x) with mixed batch sizes give
// every answer bit-identical to the same call made alone; training on another thread is a clear error; bad input
// fails only its own call. CI runs this file under ThreadSanitizer too (make test-tsan).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <cstring>
#include <functional>
#include <future>
#include <thread>

#include "applications/mobilenet_v2.h"
#include "testing/errors.h"
#include "testing/fixtures.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::error_of;
using testing::random_tensor;

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ha = a.to(Device::cpu()), hb = b.to(Device::cpu());
  return std::memcmp(ha.raw_data(), hb.raw_data(), ha.nbytes()) == 0;
}

// A small functional convnet, as a Fashion-MNIST classifier is built.
Model convnet() {
  SymbolicTensor x = Input({28, 28, 1}, "image");
  SymbolicTensor y = layers::Conv2D({.filters = 8, .kernel_size = 3, .activation = "relu"})(x);
  y = layers::MaxPooling2D()(y);
  y = layers::Conv2D({.filters = 16, .kernel_size = 3, .activation = "relu"})(y);
  y = layers::Flatten()(y);
  y = layers::Dense({.units = 10, .activation = "softmax"})(y);
  return Model(x, y, "convnet");
}

// Dropout and BatchNormalization, trained a few steps so that the moving statistics are not their initial ones:
// inference must use those and drop nothing.
Model dropout_batch_norm() {
  SymbolicTensor x = Input({64}, "features");
  SymbolicTensor y = layers::Dense({.units = 512, .activation = "relu"})(x);
  y = layers::BatchNormalization()(y);
  y = layers::Dropout({.rate = 0.5})(y);
  y = layers::Dense({.units = 4, .activation = "softmax"})(y);
  Model model(x, y, "dropout_bn");
  model.compile(optimizers::Adam(0.01), losses::SparseCategoricalCrossentropy());
  Tensor labels(Shape{64}, DType::int32);
  for (Index i = 0; i < 64; ++i) labels.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 4);
  model.fit(random_tensor({64, 64}, 5), labels, {.epochs = 2, .batch_size = 16, .verbose = 0});
  return model;
}

// [n, example...].
Shape batch_of(Index n, const Shape& example) {
  std::vector<Index> dims{n};
  dims.insert(dims.end(), example.begin(), example.end());
  return Shape(dims);
}

enum class Call { predict, predict_on_batch, call };

Tensor run(Model& model, Call how, const Tensor& x) {
  switch (how) {
    case Call::predict: return model.predict(x, {.batch_size = 64});
    case Call::predict_on_batch: return model.predict_on_batch(x);
    case Call::call: return model(x).to(Device::cpu());
  }
  return {};
}

// 8 threads, 200 calls each, cycling through the three calls and five batch sizes; every answer is compared with
// the one the same call on the same input gave alone, before the threads started.
void expect_serial_answers_from_threads(Model model, const Shape& example, int threads = 8, int calls = 200) {
  const std::vector<Index> batches = {1, 3, 2, 5, 4};
  std::vector<Tensor> inputs;
  for (std::size_t b = 0; b < batches.size(); ++b)
    inputs.push_back(random_tensor(batch_of(batches[b], example), 100 + b));
  const Call calls_of[] = {Call::predict, Call::predict_on_batch, Call::call};
  std::vector<std::vector<Tensor>> serial(3);
  for (int c = 0; c < 3; ++c)
    for (const Tensor& x : inputs) serial[static_cast<std::size_t>(c)].push_back(run(model, calls_of[c], x));

  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = 0; i < calls; ++i) {
        const std::size_t c = static_cast<std::size_t>((t + i) % 3);
        const std::size_t b = static_cast<std::size_t>((t * 7 + i) % static_cast<int>(inputs.size()));
        try {
          if (!same_bits(run(model, calls_of[c], inputs[b]), serial[c][b])) ++wrong;
        } catch (const std::exception&) {
          ++failed;
        }
      }
    });
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(wrong.load(), 0) << model.name() << ": answers that differ from the serial ones";
  EXPECT_EQ(failed.load(), 0) << model.name() << ": calls that threw";
}

TEST(ConcurrentInference, ConvnetAnswersEqualTheSerialOnesFromEightThreads) {
  set_random_seed(11);
  expect_serial_answers_from_threads(convnet(), {28, 28, 1});
}

TEST(ConcurrentInference, MobileNetV2AnswersEqualTheSerialOnesFromEightThreads) {
  set_random_seed(12);
  expect_serial_answers_from_threads(
      applications::MobileNetV2({.input_shape = {32, 32, 3}, .alpha = 0.35, .classes = 10, .weights = ""}),
      {32, 32, 3});
}

TEST(ConcurrentInference, DropoutAndBatchNormalizationAnswersEqualTheSerialOnesFromEightThreads) {
  set_random_seed(13);
  Model model = dropout_batch_norm();
  expect_serial_answers_from_threads(model, {64});
  // Inference: nothing dropped, the moving statistics used. Two calls agree, and the batch of one example gives
  // that example's row of a larger batch.
  const Tensor x = random_tensor({6, 64}, 3);
  const Tensor all = model.predict_on_batch(x);
  const Tensor first = model.predict_on_batch(x.slice(0, 1));
  for (Index j = 0; j < 4; ++j) EXPECT_NEAR(first.data<float>()[j], all.data<float>()[j], 1e-6f);
}

TEST(ConcurrentInference, GpuCallsFromEightThreadsTakeTurnsAndMatchTheSerialAnswers_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  set_random_seed(23);
  Model model = convnet();
  model.to(Device::cuda(0));
  expect_serial_answers_from_threads(model, {28, 28, 1}, 8, 50);
  Model mobilenet = applications::MobileNetV2({.input_shape = {32, 32, 3}, .alpha = 0.35, .classes = 10, .weights = ""});
  mobilenet.to(Device::cuda(0));
  expect_serial_answers_from_threads(mobilenet, {32, 32, 3}, 8, 25);
  // A training step of another model on the same GPU takes its turn too.
  Model trained = dropout_batch_norm();
  trained.to(Device::cuda(0));
  std::thread other([&] {
    Tensor y(Shape{16}, DType::int32);
    for (Index i = 0; i < 16; ++i) y.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 4);
    trained.fit(random_tensor({16, 64}, 31), y, {.epochs = 3, .batch_size = 4, .verbose = 0});
  });
  expect_serial_answers_from_threads(model, {28, 28, 1}, 4, 25);
  other.join();
}

TEST(ConcurrentInference, AModelLoadedFromAFileServesThreadsToo) {
  set_random_seed(14);
  Model made = convnet();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("concurrent_inference_" + std::to_string(::getpid()) + ".tower")).string();
  made.save(path);
  Model loaded = Model::load(path);
  std::filesystem::remove(path);
  expect_serial_answers_from_threads(loaded, {28, 28, 1}, 4, 50);
}

TEST(ConcurrentInference, AnUnbuiltSequentialIsBuiltOnceByConcurrentFirstCalls) {
  set_random_seed(15);
  Sequential model({layers::Dense({.units = 5, .activation = "tanh"}), layers::Dense({.units = 2})});
  const Tensor x = random_tensor({3, 7}, 1);
  std::vector<Tensor> answers(8);
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < answers.size(); ++t) pool.emplace_back([&, t] { answers[t] = model.predict_on_batch(x); });
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(model.layers().size(), 2u);
  for (const Tensor& a : answers) EXPECT_TRUE(same_bits(a, answers[0]));
  EXPECT_TRUE(same_bits(model.predict_on_batch(x), answers[0]));
}

TEST(ConcurrentInference, PlansPerShapeBoundTheMemoryAndCallsWaitForAFreePlan) {
  set_random_seed(16);
  Model model = convnet();
  model->set_inference_options({.plans_per_shape = 2});
  const Tensor x = random_tensor({4, 28, 28, 1}, 2);
  const Tensor expected = model.predict_on_batch(x);
  std::atomic<int> wrong{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 8; ++t)
    pool.emplace_back([&] {
      for (int i = 0; i < 20; ++i)
        if (!same_bits(model.predict_on_batch(x), expected)) ++wrong;
    });
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(model->inference_plans().plan_count({x.shape()}), 2u);
  EXPECT_GE(model->inference_plans().plan_count({x.shape()}), 1u);
}

TEST(ConcurrentInference, ShapesBeyondMaxShapesDropTheLeastRecentlyUsed) {
  set_random_seed(17);
  Model model = convnet();
  model->set_inference_options({.plans_per_shape = 1, .max_shapes = 3});
  for (Index n = 1; n <= 6; ++n) model.predict_on_batch(random_tensor({n, 28, 28, 1}, static_cast<std::uint64_t>(n)));
  EXPECT_EQ(model->inference_plans().shape_count(), 3u);
  EXPECT_EQ(model->inference_plans().plan_count({Shape{6, 28, 28, 1}}), 1u);
  EXPECT_EQ(model->inference_plans().plan_count({Shape{1, 28, 28, 1}}), 0u);
}

TEST(ConcurrentInference, BadInputFailsItsOwnCallAndTheOtherThreadsGoOn) {
  set_random_seed(18);
  Model model = convnet();
  const Tensor x = random_tensor({2, 28, 28, 1}, 4);
  const Tensor expected = model.predict_on_batch(x);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, served{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 3; ++t)
    pool.emplace_back([&] {
      while (!stop || served < 30) {
        if (!same_bits(model.predict_on_batch(x), expected)) ++wrong;
        ++served;
      }
    });
  for (int i = 0; i < 10; ++i) {
    EXPECT_NE(error_of([&] { model.predict_on_batch(random_tensor({2, 27, 28, 1}, 1)); })
                  .find("input 'image' has shape (2, 27, 28, 1), the model expects (None, 28, 28, 1)"),
              std::string::npos);
    EXPECT_NE(error_of([&] { model.predict_on_batch(Tensor(Shape{0, 28, 28, 1})); }).find("a batch of 0 examples"),
              std::string::npos);
    EXPECT_NE(error_of([&] { model->predict_on_batch({x, x}); }).find("got 2 input(s); the model takes 1"),
              std::string::npos);
    EXPECT_NE(error_of([&] { model.predict_on_batch(Tensor()); }).find("undefined tensor"), std::string::npos);
  }
  // Integer inputs are converted as fit converts them.
  Tensor ints(Shape{2, 28, 28, 1}, DType::int32);
  for (Index i = 0; i < ints.numel(); ++i) ints.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 3);
  Tensor floats(Shape{2, 28, 28, 1});
  for (Index i = 0; i < floats.numel(); ++i) floats.data<float>()[i] = static_cast<float>(i % 3);
  EXPECT_TRUE(same_bits(model.predict_on_batch(ints), model.predict_on_batch(floats)));
  stop = true;
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ConcurrentInference, InferenceWhileAnotherThreadTrainsIsAClearError) {
  set_random_seed(19);
  Model model = dropout_batch_norm();
  const Tensor x = random_tensor({32, 64}, 6);
  Tensor y(Shape{32}, DType::int32);
  for (Index i = 0; i < 32; ++i) y.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 4);

  std::promise<void> training, checked;
  std::shared_future<void> done_checking = checked.get_future().share();
  auto hold = std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaCallbackOptions{
      .on_train_batch_begin = [&, first = true](std::int64_t, const callbacks::Logs&) mutable {
        if (!first) return;
        first = false;
        training.set_value();
        done_checking.wait();
      }});
  std::thread trainer([&] { model.fit(x, y, {.epochs = 1, .batch_size = 8, .verbose = 0, .callbacks = {hold}}); });
  training.get_future().wait();
  const std::string e = "while the model trains (fit() or train_on_batch() on another thread)";
  EXPECT_NE(error_of([&] { model.predict_on_batch(x); }).find("Model 'dropout_bn': predict_on_batch() was called " + e),
            std::string::npos);
  EXPECT_NE(error_of([&] { model.predict(x); }).find(e), std::string::npos);
  EXPECT_NE(error_of([&] { model(x); }).find(e), std::string::npos);
  EXPECT_NE(error_of([&] { model.evaluate(x, y, {.verbose = 0}); }).find(e), std::string::npos);
  checked.set_value();
  trainer.join();
  EXPECT_EQ(model.predict_on_batch(x).shape(), (Shape{32, 4}));  // after fit, inference serves again
}

TEST(ConcurrentInference, ACallbackOfFitPredictsOnTheTrainingThread) {
  set_random_seed(20);
  Model model = dropout_batch_norm();
  const Tensor x = random_tensor({16, 64}, 7);
  Tensor y(Shape{16}, DType::int32);
  for (Index i = 0; i < 16; ++i) y.data<std::int32_t>()[i] = static_cast<std::int32_t>(i % 4);
  int predicted = 0;
  auto cb = std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaCallbackOptions{
      .on_epoch_end = [&](int, const callbacks::Logs&) {
        EXPECT_EQ(model.predict_on_batch(x.slice(0, 3)).shape(), (Shape{3, 4}));
        EXPECT_EQ(model.predict(x).shape(), (Shape{16, 4}));
        ++predicted;
      }});
  model.fit(x, y, {.epochs = 2, .batch_size = 8, .verbose = 0, .callbacks = {cb},
                   .validation_data = data::Dataset::from_tensor_slices({x, y}).batch(8)});
  EXPECT_EQ(predicted, 2);
}

TEST(ConcurrentInference, SetWeightsWaitsForTheCallsInFlightAndNoAnswerMixesOldAndNewWeights) {
  set_random_seed(21);
  Model model = convnet();
  const Tensor x = random_tensor({3, 28, 28, 1}, 8);
  const std::vector<Tensor> old_weights = model.get_weights();
  const Tensor old_answer = model.predict_on_batch(x);
  std::vector<Tensor> new_weights;
  for (std::size_t i = 0; i < old_weights.size(); ++i)
    new_weights.push_back(random_tensor(old_weights[i].shape(), 300 + i, -0.2f, 0.2f));
  model.set_weights(new_weights);
  const Tensor new_answer = model.predict_on_batch(x);
  model.set_weights(old_weights);
  ASSERT_FALSE(same_bits(old_answer, new_answer));

  std::atomic<bool> switched{false};
  std::atomic<int> mixed{0}, stale{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t)
    pool.emplace_back([&] {
      for (int i = 0; i < 60; ++i) {
        const bool after = switched;
        const Tensor a = model.predict_on_batch(x);
        if (same_bits(a, new_answer)) continue;
        if (!same_bits(a, old_answer)) ++mixed;
        else if (after) ++stale;  // started after set_weights returned, yet computed with the old weights
      }
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  model.set_weights(new_weights);
  switched = true;
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(mixed.load(), 0);
  EXPECT_EQ(stale.load(), 0);
}

TEST(ConcurrentInference, EvaluateOnSeparateDatasetsFromSeveralThreads) {
  set_random_seed(22);
  Model model = dropout_batch_norm();
  std::vector<std::pair<Tensor, Tensor>> sets;
  for (int s = 0; s < 4; ++s) {
    Tensor y(Shape{24}, DType::int32);
    for (Index i = 0; i < 24; ++i) y.data<std::int32_t>()[i] = static_cast<std::int32_t>((i + s) % 4);
    sets.emplace_back(random_tensor({24, 64}, 40 + static_cast<std::uint64_t>(s)), y);
  }
  std::vector<double> serial;
  for (auto& [x, y] : sets) serial.push_back(*model.evaluate(x, y, {.batch_size = 8, .verbose = 0}).get("loss"));
  std::vector<double> threaded(sets.size());
  std::vector<std::thread> pool;
  for (std::size_t s = 0; s < sets.size(); ++s)
    pool.emplace_back([&, s] {
      for (int i = 0; i < 5; ++i) {
        threaded[s] = *model.evaluate(sets[s].first, sets[s].second, {.batch_size = 8, .verbose = 0}).get("loss");
        model.predict_on_batch(sets[s].first);  // inference beside the evaluations
      }
    });
  for (std::thread& th : pool) th.join();
  for (std::size_t s = 0; s < sets.size(); ++s) EXPECT_EQ(threaded[s], serial[s]) << "dataset " << s;
}

TEST(ConcurrentInference, AMultiOutputModelGivesEveryOutputAndTheTensorFormsRefuseIt) {
  SymbolicTensor x = Input({4});
  SymbolicTensor a = layers::Dense({.units = 2, .name = "a"})(x);
  SymbolicTensor b = layers::Dense({.units = 3, .name = "b"})(x);
  Model model({x}, {a, b}, "two_heads");
  const Tensor in = random_tensor({5, 4}, 9);
  const std::vector<Tensor> outs = model.predict_on_batch(std::vector<Tensor>{in});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[1].shape(), (Shape{5, 3}));
  EXPECT_TRUE(same_bits(model(std::vector<Tensor>{in})[0], outs[0]));
  EXPECT_NE(error_of([&] { model.predict_on_batch(in); }).find("has 2 outputs"), std::string::npos);
}

}  // namespace
}  // namespace tower
