// Every loss and metric op of the backend on a GPU against the CPU, end to end: the same seeded training of a
// small model with a weight regularizer, class and sample weights, on both devices, then metric merging and
// Mean's scalar updates. The CPU side of each op is tested against scalar references in
// tests/backend/loss_functors_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "testing/layer_test.h"

namespace tower {
namespace {

enum class Labels { sparse, sparse_with_ignored, one_hot, binary, regression, distribution, counts };

struct LossSetup {
  const char* name;
  const char* activation;
  int units;
  Labels labels;
  std::function<losses::LossPtr()> loss;
  std::function<std::vector<metrics::MetricPtr>()> metrics;
};

Tensor targets(Labels kind, Index n, Index units) {
  if (kind == Labels::sparse || kind == Labels::sparse_with_ignored) {
    // Every fifth example of sparse_with_ignored is labelled -1, the class its loss ignores.
    std::vector<std::int32_t> y(static_cast<std::size_t>(n));
    for (Index i = 0; i < n; ++i)
      y[static_cast<std::size_t>(i)] =
          kind == Labels::sparse_with_ignored && i % 5 == 0 ? -1 : static_cast<std::int32_t>((i * 7) % units);
    return Tensor::from_vector(y, {n});
  }
  std::vector<float> y(static_cast<std::size_t>(n * units));
  for (Index i = 0; i < n; ++i)
    for (Index c = 0; c < units; ++c) {
      float& v = y[static_cast<std::size_t>(i * units + c)];
      switch (kind) {
        case Labels::one_hot: v = (i * 7) % units == c ? 1.f : 0.f; break;
        case Labels::binary: v = (i + c) % 3 == 0 ? 1.f : 0.f; break;
        case Labels::regression: v = std::sin(0.3f * static_cast<float>(i + 2 * c)); break;
        case Labels::counts: v = static_cast<float>((i + 2 * c) % 4); break;
        default: v = static_cast<float>(1 + (i + c) % 4) / static_cast<float>(units * 2.5); break;
      }
    }
  return Tensor::from_vector(y, {n, units});
}

std::map<std::string, double> train(const LossSetup& s, Device device) {
  set_random_seed(11);
  const Index n = 48;
  const Tensor x = testing::random_tensor({n, 5}, 4);
  const Tensor y = targets(s.labels, n, s.units);
  std::vector<float> w(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.5f + static_cast<float>(i % 3) * 0.5f;
  const Tensor sample_weight = Tensor::from_vector(w, {n});
  Sequential model({InputLayer({.shape = {5}}), layers::Dense({.units = s.units, .activation = s.activation,
                                                               .kernel_regularizer = regularizers::L1L2(1e-3, 1e-2)})});
  model.to(device);
  model.compile(optimizers::SGD(0.1), s.loss(), s.metrics());
  FitOptions options{.epochs = 2, .batch_size = 16, .verbose = 0, .shuffle = false};
  if (s.labels == Labels::sparse || s.labels == Labels::sparse_with_ignored)
    options.class_weight = {{0, 2.0}, {1, 0.5}};
  const callbacks::History h = model.fit(x, y, options);
  std::map<std::string, double> out;
  for (const std::string& key : h.keys()) out["fit " + key] = h[key].back();
  const callbacks::Logs weighted = model.train_on_batch(x, y, sample_weight);
  for (const auto& [key, value] : weighted.entries()) out["weighted " + key] = value;
  const callbacks::Logs test = model.test_on_batch(x, y, sample_weight);
  for (const auto& [key, value] : test.entries()) out["test " + key] = value;
  return out;
}

const std::vector<LossSetup>& setups() {
  using namespace metrics;
  static const std::vector<LossSetup> all = {
      {"sparse categorical crossentropy", "softmax", 4, Labels::sparse,
       [] { return losses::SparseCategoricalCrossentropy(); },
       [] {
         return std::vector<MetricPtr>{SparseCategoricalAccuracy(), SparseTopKCategoricalAccuracy({.k = 2}),
                                       MeanIoU({.num_classes = 4, .sparse_y_pred = false})};
       }},
      {"categorical crossentropy, smoothed", "softmax", 4, Labels::one_hot,
       [] { return losses::CategoricalCrossentropy({.label_smoothing = 0.1}); },
       [] {
         return std::vector<MetricPtr>{CategoricalAccuracy(), TopKCategoricalAccuracy({.k = 2}),
                                       F1Score({.average = "macro"}), OneHotMeanIoU({.num_classes = 4}),
                                       AUC({.multi_label = true, .label_weights = std::vector<double>{1, 2, 0.5, 1}})};
       }},
      {"categorical crossentropy from logits", "linear", 4, Labels::one_hot,
       [] { return losses::CategoricalCrossentropy({.from_logits = true}); },
       [] { return std::vector<MetricPtr>{CategoricalAccuracy()}; }},
      {"binary crossentropy", "sigmoid", 3, Labels::binary, [] { return losses::BinaryCrossentropy(); },
       [] {
         return std::vector<MetricPtr>{BinaryAccuracy(), Precision(), Recall(), AUC(), TruePositives(),
                                       TrueNegatives({.thresholds = 0.4}),
                                       SensitivityAtSpecificity({.specificity = 0.5, .class_id = 1}),
                                       RecallAtPrecision({.precision = 0.4}), BinaryIoU(),
                                       FBetaScore({.average = "micro", .beta = 2.0, .threshold = 0.5})};
       }},
      {"mean squared error", "tanh", 3, Labels::regression, [] { return losses::MeanSquaredError(); },
       [] {
         return std::vector<MetricPtr>{MeanAbsoluteError(), MeanSquaredError(), RootMeanSquaredError(), R2Score()};
       }},
      {"mean absolute error", "linear", 3, Labels::regression, [] { return losses::MeanAbsoluteError(); },
       [] { return std::vector<MetricPtr>{}; }},
      {"huber", "linear", 3, Labels::regression, [] { return losses::Huber(); }, [] { return std::vector<MetricPtr>{}; }},
      {"kl divergence", "softmax", 4, Labels::distribution, [] { return losses::KLDivergence(); },
       [] { return std::vector<MetricPtr>{KLDivergence()}; }},
      {"sparse categorical crossentropy, ignore_class", "softmax", 4, Labels::sparse_with_ignored,
       [] { return losses::SparseCategoricalCrossentropy({.ignore_class = -1}); },
       [] { return std::vector<MetricPtr>{}; }},
      {"sparse categorical crossentropy from logits, ignore_class", "linear", 4, Labels::sparse_with_ignored,
       [] { return losses::SparseCategoricalCrossentropy({.from_logits = true, .ignore_class = -1}); },
       [] { return std::vector<MetricPtr>{}; }},
      {"hinge", "tanh", 3, Labels::binary, [] { return losses::Hinge(); },
       [] { return std::vector<MetricPtr>{Hinge(), SquaredHinge()}; }},
      {"squared hinge", "tanh", 3, Labels::binary, [] { return losses::SquaredHinge(); },
       [] { return std::vector<MetricPtr>{}; }},
      {"categorical hinge", "linear", 4, Labels::one_hot, [] { return losses::CategoricalHinge(); },
       [] { return std::vector<MetricPtr>{CategoricalHinge()}; }},
      {"log cosh", "linear", 3, Labels::regression, [] { return losses::LogCosh(); },
       [] { return std::vector<MetricPtr>{LogCoshError(), CosineSimilarity()}; }},
      {"poisson", "softplus", 3, Labels::counts, [] { return losses::Poisson(); },
       [] { return std::vector<MetricPtr>{Poisson(), MeanSquaredLogarithmicError(), MeanAbsolutePercentageError()}; }},
      {"mean squared logarithmic error", "softplus", 3, Labels::counts,
       [] { return losses::MeanSquaredLogarithmicError(); }, [] { return std::vector<MetricPtr>{}; }},
      {"mean absolute percentage error", "linear", 3, Labels::distribution,
       [] { return losses::MeanAbsolutePercentageError(); }, [] { return std::vector<MetricPtr>{}; }},
      {"cosine similarity", "linear", 3, Labels::regression, [] { return losses::CosineSimilarity(); },
       [] { return std::vector<MetricPtr>{}; }},
      {"binary focal crossentropy, balanced", "sigmoid", 3, Labels::binary,
       [] { return losses::BinaryFocalCrossentropy({.apply_class_balancing = true, .gamma = 1.5}); },
       [] { return std::vector<MetricPtr>{}; }},
      {"binary focal crossentropy from logits, smoothed", "linear", 3, Labels::binary,
       [] { return losses::BinaryFocalCrossentropy({.from_logits = true, .label_smoothing = 0.1}); },
       [] { return std::vector<MetricPtr>{}; }},
      {"categorical focal crossentropy", "softmax", 4, Labels::one_hot,
       [] { return losses::CategoricalFocalCrossentropy(); }, [] { return std::vector<MetricPtr>{}; }},
      {"categorical focal crossentropy from logits, smoothed", "linear", 4, Labels::one_hot,
       [] { return losses::CategoricalFocalCrossentropy({.gamma = 3.0, .from_logits = true, .label_smoothing = 0.2}); },
       [] { return std::vector<MetricPtr>{}; }},
      {"dice over the batch", "sigmoid", 3, Labels::binary, [] { return losses::Dice(); },
       [] { return std::vector<MetricPtr>{}; }},
      {"tversky per example", "sigmoid", 3, Labels::binary,
       [] { return losses::Tversky({.alpha = 0.3, .beta = 0.7, .axis = std::vector<int>{1}}); },
       [] { return std::vector<MetricPtr>{}; }},
  };
  return all;
}

// The comparison's harness on the CPU alone: every setup trains, and twice gives the same values bit for bit.
TEST(LossesOnTheGpu, EverySetupTrainsReproduciblyOnTheCpu) {
  for (const LossSetup& s : setups()) {
    SCOPED_TRACE(s.name);
    const auto a = train(s, Device::cpu()), b = train(s, Device::cpu());
    EXPECT_GE(a.size(), 3u) << s.name;  // fit, weighted and test loss, then the metrics
    EXPECT_EQ(a, b) << s.name;
    for (const auto& [key, value] : a) EXPECT_TRUE(std::isfinite(value)) << s.name << ": " << key;
  }
}

TEST(LossesOnTheGpu, EveryLossAndMetricMatchesTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  for (const LossSetup& s : setups()) {
    const auto cpu = train(s, Device::cpu());
    const auto gpu = train(s, Device::cuda(0));
    ASSERT_EQ(cpu.size(), gpu.size()) << s.name;
    for (const auto& [key, value] : cpu)
      EXPECT_NEAR(gpu.at(key), value, 1e-4 * std::max(1.0, std::fabs(value))) << s.name << ": " << key;
  }
}

// A label that is not a class index: the CPU stops the step with an error naming it, and so does a GPU for labels
// still in host memory (checked there, before they are sent); labels already on the GPU are not read back in the
// middle of a step, so that example's loss is NaN (as in TensorFlow's GPU kernels).
TEST(LossesOnTheGpu, AnInvalidSparseLabelIsAnErrorFromTheHostAndNaNFromTheGpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const auto step_on = [](Device device, Device labels_on) {
    set_random_seed(2);
    Sequential model({InputLayer({.shape = {5}}), layers::Dense({.units = 3, .activation = "softmax"})});
    model.to(device);
    model.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
    const Tensor labels = Tensor::from_vector(std::vector<std::int32_t>{0, 1, 7, 2}, {4}).to(labels_on);
    return *model.train_on_batch(testing::random_tensor({4, 5}, 1), labels).get("loss");
  };
  const std::string expected = "label 7 at index 2 is not a class index in [0, 3)";
  for (const Device device : {Device::cpu(), Device::cuda(0)}) {
    try {
      step_on(device, Device::cpu());
      ADD_FAILURE() << device.to_string() << ": no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(std::isnan(step_on(Device::cuda(0), Device::cuda(0))));
}

// The op behind the CPU's check, on a GPU: the first label that is not a class index, for each label dtype.
TEST(LossesOnTheGpu, FindInvalidClassMatchesTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const auto first_invalid = [](const Tensor& labels, Device device) {
    const Tensor on = labels.to(device);
    Tensor first(Shape{1}, DType::int64, device);
    backend::get(device).find_invalid_class({on.raw_data(), on.dtype()}, on.numel(), 3,
                                            backend::LossParams{}.ignore_class, first.data<std::int64_t>());
    return first.to(Device::cpu()).data<std::int64_t>()[0];
  };
  const Tensor labels[] = {Tensor::from_vector(std::vector<std::int32_t>{0, 1, 2, 2, 7, 1, -1}, {7}),
                           Tensor::from_vector(std::vector<float>{0, 1, 2, 1.5f, 2, 1, 0}, {7}),
                           Tensor::from_vector(std::vector<std::int32_t>{0, 1, 2, 2, 1, 1, 0}, {7})};
  for (const Tensor& l : labels) EXPECT_EQ(first_invalid(l, Device::cuda(0)), first_invalid(l, Device::cpu()));
  EXPECT_EQ(first_invalid(labels[0], Device::cpu()), 4);
  EXPECT_EQ(first_invalid(labels[2], Device::cpu()), 7);
}

TEST(LossesOnTheGpu, MergedAndScalarMetricStatesMatchTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const auto merged = [](Device device) {
    const Tensor y = targets(Labels::binary, 10, 3).to(device);
    const Tensor p = testing::random_tensor({10, 3}, 9, 0.f, 1.f).to(device);
    metrics::AUC a, b;
    a->update_state(y, p);
    b->update_state(y, testing::random_tensor({10, 3}, 10, 0.f, 1.f).to(device));
    a->merge_state(*b.ptr());
    metrics::Mean m;
    m->update_state(p);
    m->update(2.5, 3.0);
    return std::make_pair(a->result(), m->result());
  };
  const auto [cpu_auc, cpu_mean] = merged(Device::cpu());
  const auto [gpu_auc, gpu_mean] = merged(Device::cuda(0));
  EXPECT_NEAR(gpu_auc, cpu_auc, 1e-6);
  EXPECT_NEAR(gpu_mean, cpu_mean, 1e-6);
}

}  // namespace
}  // namespace tower
