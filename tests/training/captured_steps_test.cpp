// fit's training steps captured as graphs and replayed (TrainingLoop + StepGraphs + the plan's step values). On
// the CPU an injected capturer stands for the GPU's: its "graph" replays the step's body, which reads every
// per-step value from memory the loop rewrote before the replay (staged inputs and targets, Dropout's seeds), so
// training through it must equal training without it bit for bit. On a GPU the same runs with CUDA graphs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/capture_check.h"
#include "api/training/step_graphs.h"
#include "testing/fixtures.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using detail::StepGraphs;

class BodyGraph final : public backend::StepGraph {
 public:
  explicit BodyGraph(std::function<void()> body) : body_(std::move(body)) {}
  void replay() override { body_(); }

 private:
  std::function<void()> body_;
};

// Records nothing and runs nothing at capture time; replay runs the body, as a graph replays its ops.
class BodyCapturer final : public detail::StepCapturer {
 public:
  std::unique_ptr<backend::StepGraph> capture(const std::function<void()>& body) override {
    return std::make_unique<BodyGraph>(body);
  }
};

class HostFreeGraph final : public backend::StepGraph {
 public:
  void replay() override {}
};

// What a GPU's capture does, as far as the host sees it: the body's host code runs once, at capture time, and a
// replay runs none of it. Whatever the capture could not hold is recorded: an upload or a read through host
// memory, an allocation (core's CaptureCheck), an exception. On the CPU the ops are host code, so the capture
// runs them once (the graph's first launch, which follows the capture at once) and later replays compute
// nothing: this double proves the host's protocol around a graph, BodyCapturer the numbers.
class HostOnceCapturer final : public detail::StepCapturer {
 public:
  std::vector<std::string> rejected;
  std::unique_ptr<backend::StepGraph> capture(const std::function<void()>& body) override {
    try {
      detail::CaptureCheck check([this](const std::string& what) { rejected.push_back(what); });
      body();
    } catch (const std::exception& e) {
      rejected.push_back(std::string("the step threw: ") + e.what());
      return nullptr;
    }
    return std::make_unique<HostFreeGraph>();
  }
};

// Its inputs come as 2x3 and are flattened: a view of the staged input in the plan, so the captured steps hold a
// view as well.
Sequential dropout_mlp() {
  return Sequential({InputLayer({.shape = {2, 3}}), layers::Flatten(), layers::Dense({.units = 16, .activation = "relu"}),
                     layers::Dropout({.rate = 0.3f}), layers::BatchNormalization(),
                     layers::Dense({.units = 3, .activation = "softmax"})});
}

std::pair<Tensor, Tensor> data(Index n) {
  const Tensor x = testing::random_tensor({n, 2, 3}, 11);
  std::vector<std::int32_t> y(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) y[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7) % 3);
  return {x, Tensor::from_vector(y, {n})};
}

struct Trained {
  std::vector<std::vector<float>> weights;
  std::vector<double> losses;
  StepGraphs::Counts counts;
};

// The Dropout MLP (its input reshaped, another view) with an L2 penalty on its first kernel, for an optimizer whose every step has other scalars:
// Adam's bias corrections, a decaying learning rate and the weight decay it scales, and clipping.
Sequential regularized_mlp() {
  return Sequential({InputLayer({.shape = {2, 3}}), layers::Reshape({.target_shape = {6}}),
                     layers::Dense({.units = 16, .activation = "relu", .kernel_regularizer = regularizers::L2(0.01)}),
                     layers::Dropout({.rate = 0.3f}), layers::BatchNormalization(),
                     layers::Dense({.units = 3, .activation = "softmax"})});
}

optimizers::OptimizerPtr sgd_momentum() { return optimizers::SGD({.learning_rate = 0.1, .momentum = 0.9}); }

optimizers::OptimizerPtr decaying_adamw() {
  return optimizers::AdamW({.learning_rate = optimizers::schedules::ExponentialDecay(
                                {.initial_learning_rate = 0.01, .decay_steps = 3, .decay_rate = 0.7}),
                            .weight_decay = 0.05,
                            .global_clipnorm = 1.0});
}

// Lamb (a rule reducing over each tensor) with the base options whose choices are scalars in device memory:
// gradients accumulated over two steps, moving averages overwriting the variables every third update, weight decay
// with the biases excluded.
optimizers::OptimizerPtr averaged_accumulating_lamb() {
  optimizers::OptimizerPtr opt = optimizers::Lamb({.learning_rate = 0.01,
                                                   .weight_decay = 0.05,
                                                   .use_ema = true,
                                                   .ema_momentum = 0.8,
                                                   .ema_overwrite_frequency = 3,
                                                   .gradient_accumulation_steps = 2});
  opt->exclude_from_weight_decay({"bias"});
  return opt;
}

// Trains the Dropout MLP (or `make_model`'s) on `device` for `epochs` of `n` examples in batches of `batch`.
Trained train(Device device, Index n, Index batch, int epochs, std::shared_ptr<detail::StepCapturer> capturer,
              const std::function<optimizers::OptimizerPtr()>& make_optimizer = sgd_momentum,
              const std::function<Sequential()>& make_model = dropout_mlp) {
  set_random_seed(5);
  Sequential model = make_model();
  model.to(device);
  if (capturer) model.impl().training_loop().set_step_capturer(capturer);
  model.compile(make_optimizer(), losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
  auto [x, y] = data(n);
  const callbacks::History h = model.fit(x, y, {.epochs = epochs, .batch_size = batch, .verbose = 0});
  Trained t;
  for (const Tensor& w : model.get_weights()) t.weights.push_back(w.to_vector());
  t.losses = h["loss"];
  t.counts = model.impl().training_loop().step_graphs().counts();
  return t;
}

TEST(CapturedSteps, ReplayedStepsTrainExactlyAsEagerStepsOnTheCpu) {
  // 50 examples in batches of 8: six full batches and a short one of 2 per epoch.
  const Trained eager = train(Device::cpu(), 50, 8, 3, nullptr);
  const Trained graphed = train(Device::cpu(), 50, 8, 3, std::make_shared<BodyCapturer>());
  EXPECT_EQ(graphed.weights, eager.weights);
  EXPECT_EQ(graphed.losses, eager.losses);
  // Without a capturer nothing goes through StepGraphs on the CPU.
  EXPECT_EQ(eager.counts.eager + eager.counts.captured + eager.counts.replayed, 0);
  // Full batches: two eager steps, one capture, then replays; every short batch runs eagerly.
  EXPECT_EQ(graphed.counts.captured, 1);
  EXPECT_EQ(graphed.counts.eager, 2 + 3);
  EXPECT_EQ(graphed.counts.replayed, 3 * 6 - 3);
}

TEST(CapturedSteps, TheOptimizersStepReplaysWithEachStepsScalars) {
  // The graph holds the update too: the learning rate, Adam's bias corrections and the weight decay change every
  // step and are read from device memory the optimizer rewrites before each replay; the regularizer's penalty
  // and gradient are in the step as well.
  const Trained eager = train(Device::cpu(), 50, 8, 3, nullptr, decaying_adamw, regularized_mlp);
  const Trained graphed = train(Device::cpu(), 50, 8, 3, std::make_shared<BodyCapturer>(), decaying_adamw, regularized_mlp);
  EXPECT_EQ(graphed.weights, eager.weights);
  EXPECT_EQ(graphed.losses, eager.losses);
  EXPECT_EQ(graphed.counts.captured, 1);
  EXPECT_EQ(graphed.counts.replayed, 3 * 6 - 3);
}

TEST(CapturedSteps, AccumulatingAndAveragingStepsReplayWithEachStepsScalars) {
  // One graph serves the steps that only accumulate, those that update and those that overwrite with the averages.
  const Trained eager = train(Device::cpu(), 50, 8, 3, nullptr, averaged_accumulating_lamb, regularized_mlp);
  const Trained graphed =
      train(Device::cpu(), 50, 8, 3, std::make_shared<BodyCapturer>(), averaged_accumulating_lamb, regularized_mlp);
  EXPECT_EQ(graphed.weights, eager.weights);
  EXPECT_EQ(graphed.losses, eager.losses);
  EXPECT_EQ(graphed.counts.captured, 1);
  EXPECT_EQ(graphed.counts.replayed, 3 * 6 - 3);
}

TEST(CapturedSteps, AStepCapturedAsAGpuCapturesItNeedsNoHostCodeOnReplay) {
  // On the H200 every replayed step ended with "<Optimizer>.finish_step: the prepared step has not run": the
  // replay ran the update, but not the host's run_step.
  for (const auto& make_optimizer : {sgd_momentum, decaying_adamw, averaged_accumulating_lamb}) {
    auto capturer = std::make_shared<HostOnceCapturer>();
    Trained t;
    ASSERT_NO_THROW(t = train(Device::cpu(), 50, 8, 2, capturer, make_optimizer, regularized_mlp));
    EXPECT_EQ(t.counts.captured, 1);
    EXPECT_EQ(t.counts.replayed, 2 * 6 - 3);
    EXPECT_EQ(capturer->rejected, std::vector<std::string>{});
  }
}

TEST(CapturedSteps, RecompilingOrMovingDropsTheGraphs) {
  set_random_seed(5);
  Sequential model = dropout_mlp();
  model.to(Device::cpu());
  detail::TrainingLoop& loop = model.impl().training_loop();
  loop.set_step_capturer(std::make_shared<BodyCapturer>());
  model.compile(optimizers::SGD({.learning_rate = 0.1}), losses::SparseCategoricalCrossentropy());
  auto [x, y] = data(32);
  model.fit(x, y, {.epochs = 1, .batch_size = 8, .verbose = 0});
  EXPECT_EQ(loop.step_graphs().graphs(), 1u);
  model.compile(optimizers::SGD({.learning_rate = 0.1}), losses::SparseCategoricalCrossentropy());
  EXPECT_EQ(loop.step_graphs().graphs(), 0u);
  model.fit(x, y, {.epochs = 1, .batch_size = 8, .verbose = 0});
  EXPECT_EQ(loop.step_graphs().graphs(), 1u);
  // Freezing a layer remakes the plan.
  model.layers().back()->set_trainable(false);
  model.fit(x, y, {.epochs = 1, .batch_size = 8, .verbose = 0});
  EXPECT_EQ(loop.step_graphs().counts().captured, 3);
}

TEST(CapturedSteps, TheCpuBackendCapturesNothing) {
  backend::Backend& cpu = backend::get(Device::cpu());
  EXPECT_FALSE(cpu.begin_capture());
  EXPECT_EQ(cpu.end_capture(), nullptr);
}

// ---- on a GPU ----------------------------------------------------------------------------------------------------

std::vector<float> host_mask(std::uint64_t seed, Index n, float rate) {
  Tensor mask({n});
  backend::get(Device::cpu()).dropout_mask(mask.data<float>(), n, rate, &seed);
  return mask.to_vector();
}

TEST(CapturedSteps, ACapturedPlanDrawsNewMasksOnEveryReplay_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  auto in = Input({300});
  Model model(in, layers::Dropout({.rate = 0.5f})(in));
  PlanOptions o;
  o.batch_size = 2;
  o.training = true;
  o.device = Device::cuda(0);
  o.seed = 3;
  Plan plan(model.impl(), o);
  const Tensor ones = Tensor::full({2, 300}, 1.f).to(Device::cuda(0));
  plan.set_input(0, ones);
  plan.forward();  // registers the seed
  backend::Backend& gpu = backend::get(Device::cuda(0));
  plan.refresh_step_values();
  ASSERT_TRUE(gpu.begin_capture());
  plan.run_forward();
  std::unique_ptr<backend::StepGraph> graph = gpu.end_capture();
  ASSERT_NE(graph, nullptr);
  for (int replay = 0; replay < 3; ++replay) {
    if (replay > 0) plan.refresh_step_values();
    graph->replay();
    EXPECT_EQ(plan.output(0).to_vector(), host_mask(plan.step_values().host_value(0), 600, 0.5f))
        << "replay " << replay;
  }
}

// 20 steps of 16 examples on cuda:0 with and without graphs: one capture, 17 replays, weights within 1e-6.
void expect_graphs_train_as_eager(const std::function<optimizers::OptimizerPtr()>& make_optimizer,
                                  const std::function<Sequential()>& make_model) {
  const Trained eager = [&] {
    testing::ScopedEnv off("TOWER_CUDA_GRAPHS", "0");
    return train(Device::cuda(0), 320, 16, 1, nullptr, make_optimizer, make_model);
  }();
  const Trained graphed = [&] {
    testing::ScopedEnv on("TOWER_CUDA_GRAPHS", std::nullopt);
    return train(Device::cuda(0), 320, 16, 1, nullptr, make_optimizer, make_model);
  }();
  EXPECT_EQ(eager.counts.eager + eager.counts.captured + eager.counts.replayed, 0);
  EXPECT_EQ(graphed.counts.captured, 1) << "the step was not captured (see the log)";
  EXPECT_EQ(graphed.counts.replayed, 17);
  ASSERT_EQ(graphed.weights.size(), eager.weights.size());
  for (std::size_t k = 0; k < eager.weights.size(); ++k) {
    ASSERT_EQ(graphed.weights[k].size(), eager.weights[k].size());
    for (std::size_t i = 0; i < eager.weights[k].size(); ++i)
      EXPECT_NEAR(graphed.weights[k][i], eager.weights[k][i], 1e-6) << "weight " << k << "[" << i << "]";
  }
  ASSERT_EQ(graphed.losses.size(), eager.losses.size());
  EXPECT_NEAR(graphed.losses[0], eager.losses[0], 1e-6);
}

TEST(CapturedSteps, TrainingWithGraphsMatchesTrainingWithout_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  expect_graphs_train_as_eager(sgd_momentum, dropout_mlp);
}

TEST(CapturedSteps, TrainingWithGraphsMatchesTrainingWithoutWithAChangingOptimizerStep_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  // A graph that baked the first replay's learning rate or bias corrections in would drift from eager training.
  expect_graphs_train_as_eager(decaying_adamw, regularized_mlp);
}

TEST(CapturedSteps, ReplayedStepsAllocateNothing_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  testing::ScopedEnv on("TOWER_CUDA_GRAPHS", std::nullopt);
  set_random_seed(5);
  Sequential model = dropout_mlp();
  model.to(Device::cuda(0));
  model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                {metrics::SparseCategoricalAccuracy()});
  auto [x, y] = data(16);
  for (int s = 0; s < 4; ++s) model.train_on_batch(x, y);
  const detail::StepGraphs& graphs = model.impl().training_loop().step_graphs();
  ASSERT_EQ(graphs.counts().captured, 1) << "the step was not captured (see the log)";
  const AllocatorStats before = allocator_for(Device::cuda(0)).stats();
  for (int s = 0; s < 5; ++s) model.train_on_batch(x, y);
  const AllocatorStats after = allocator_for(Device::cuda(0)).stats();
  EXPECT_EQ(graphs.counts().replayed, 6);
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.system_allocations, before.system_allocations);
}

}  // namespace
}  // namespace tower
