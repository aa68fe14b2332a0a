// Keras' newer losses inside fit: each compiled by its Keras name on a small Dense model, trained two epochs through
// the training loop's step (weights, reduction, backward), the loss finite and falling; and ignore_class's mean
// over the kept values, which equals training on the kept examples alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "testing/layer_test.h"

namespace tower {
namespace {

constexpr Index kExamples = 64;

Tensor features() { return testing::random_tensor({kExamples, 5}, 3); }

// Targets that a linear function of features() predicts in part: kind "binary", "one_hot", "regression", "counts",
// "positive" (in [0.5, 2.5]).
Tensor targets(const std::string& kind, Index units) {
  const std::vector<float> x = features().to_vector();
  std::vector<float> y(static_cast<std::size_t>(kExamples * units));
  for (Index i = 0; i < kExamples; ++i) {
    const float s = x[static_cast<std::size_t>(i * 5)] + 0.5f * x[static_cast<std::size_t>(i * 5 + 1)];
    const Index hot = s < -0.3f ? 0 : (s < 0.3f ? 1 : 2) % units;
    for (Index c = 0; c < units; ++c) {
      float& v = y[static_cast<std::size_t>(i * units + c)];
      const float u = s * static_cast<float>(c + 1) / static_cast<float>(units);
      if (kind == "binary") v = u > 0 ? 1.f : 0.f;
      else if (kind == "one_hot") v = c == hot ? 1.f : 0.f;
      else if (kind == "regression") v = u;
      else if (kind == "counts") v = std::round(1.5f + 1.5f * u);
      else v = 1.5f + 0.9f * u;
    }
  }
  return Tensor::from_vector(y, {kExamples, units});
}

struct Run {
  std::string loss;  // a Keras name or serialized loss, as loss_from_config reads it
  std::string activation;
  std::string targets;
  Index units = 3;
};

// Fits two epochs and checks that the loss is finite and falls.
void expect_trains(const Run& r) {
  SCOPED_TRACE(r.loss);
  set_random_seed(5);
  Sequential model({InputLayer({.shape = {5}}), layers::Dense({.units = r.units, .activation = r.activation})});
  model.compile(optimizers::Adam(0.05), losses::loss_from_config(Config::parse_json(r.loss)));
  const callbacks::History h =
      model.fit(features(), targets(r.targets, r.units), {.epochs = 2, .batch_size = 16, .verbose = 0});
  const std::vector<double>& loss = h["loss"];
  ASSERT_EQ(loss.size(), 2u);
  EXPECT_TRUE(std::isfinite(loss[0]) && std::isfinite(loss[1])) << loss[0] << ", " << loss[1];
  EXPECT_LT(loss[1], loss[0]);
}

TEST(LossTraining, HingeLossesTrain) {
  expect_trains({R"("hinge")", "tanh", "binary"});
  expect_trains({R"("squared_hinge")", "tanh", "binary"});
  expect_trains({R"("categorical_hinge")", "linear", "one_hot"});
}

TEST(LossTraining, RegressionLossesTrain) {
  expect_trains({R"("log_cosh")", "linear", "regression"});
  expect_trains({R"("poisson")", "softplus", "counts"});
  expect_trains({R"("msle")", "softplus", "counts"});
}

TEST(LossTraining, PercentageAndCosineLossesTrain) {
  expect_trains({R"("mape")", "linear", "positive"});
  expect_trains({R"("cosine_similarity")", "linear", "regression"});
}

TEST(LossTraining, FocalCrossentropiesTrain) {
  expect_trains({R"("binary_focal_crossentropy")", "sigmoid", "binary"});
  expect_trains({R"({"class_name": "BinaryFocalCrossentropy", "config": {"from_logits": true,
                   "apply_class_balancing": true, "alpha": 0.4}})",
                 "linear", "binary"});
  expect_trains({R"("categorical_focal_crossentropy")", "softmax", "one_hot"});
  expect_trains({R"({"class_name": "CategoricalFocalCrossentropy", "config": {"from_logits": true, "gamma": 3.0}})",
                 "linear", "one_hot"});
}

TEST(LossTraining, OverlapLossesTrain) {
  expect_trains({R"("dice")", "sigmoid", "binary"});
  expect_trains({R"({"class_name": "Tversky", "config": {"alpha": 0.3, "beta": 0.7, "axis": [1]}})", "sigmoid",
                 "binary"});
}

// Keras' ignore_class leaves the ignored values out of the mean: a batch with ignored rows trains as the batch of its
// kept rows alone (the same loss and, after a step of plain SGD, the same weights), through the fused softmax
// gradient and from logits.
TEST(LossTraining, IgnoredClassTrainsAsTheKeptExamplesAlone) {
  const Tensor x = testing::random_tensor({6, 4}, 7);
  const Tensor labels = Tensor::from_vector(std::vector<std::int32_t>{2, -1, 0, 1, -1, 2}, {6});
  const Tensor kept_x = Tensor::from_vector(
      [&] {
        const std::vector<float> v = x.to_vector();
        std::vector<float> out;
        for (int r : {0, 2, 3, 5}) out.insert(out.end(), v.begin() + r * 4, v.begin() + (r + 1) * 4);
        return out;
      }(),
      {4, 4});
  const Tensor kept_labels = Tensor::from_vector(std::vector<std::int32_t>{2, 0, 1, 2}, {4});
  for (const std::string activation : {"softmax", "linear"}) {
    SCOPED_TRACE(activation);
    const bool logits = activation == "linear";
    const auto step = [&](const Tensor& inputs, const Tensor& y) {
      set_random_seed(9);
      Sequential model({InputLayer({.shape = {4}}), layers::Dense({.units = 3, .activation = activation})});
      model.compile(optimizers::SGD(0.5),
                    losses::SparseCategoricalCrossentropy({.from_logits = logits, .ignore_class = -1}));
      const double loss = *model.train_on_batch(inputs, y).get("loss");
      return std::make_pair(loss, model.get_weights()[0].to_vector());
    };
    const auto [loss, kernel] = step(x, labels);
    const auto [kept_loss, kept_kernel] = step(kept_x, kept_labels);
    EXPECT_NEAR(loss, kept_loss, 1e-6);
    ASSERT_EQ(kernel.size(), kept_kernel.size());
    for (std::size_t i = 0; i < kernel.size(); ++i) EXPECT_NEAR(kernel[i], kept_kernel[i], 1e-6) << i;
  }
}

}  // namespace
}  // namespace tower
