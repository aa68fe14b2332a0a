// Every loss's backward against central finite differences of L = sum(scale * per_example) (scale fixed random, so the
// losses whose rows decide together, over-batch Dice and Tversky, ignore_class, are checked with unequal scales),
// one table of cases in the spirit of ggml's test-backend-ops; and the fused softmax gradient of the crossentropies
// against the softmax's backward applied to their unfused gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "api/losses/losses.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

using testing::random_tensor;

struct GradCase {
  std::string label;
  std::string loss_json;  // a serialized loss, as loss_from_config reads it
  Tensor y_true, y_pred;
};

Tensor labels(const std::vector<std::int32_t>& v, Shape shape) { return Tensor::from_vector(v, std::move(shape)); }

// A one-hot [rows, classes] tensor.
Tensor one_hot(const std::vector<int>& classes, Index num_classes) {
  std::vector<float> v(classes.size() * num_classes, 0.f);
  for (std::size_t r = 0; r < classes.size(); ++r) v[r * num_classes + classes[r]] = 1.f;
  return Tensor::from_vector(v, {static_cast<Index>(classes.size()), num_classes});
}

// Rows of `shape` that are distributions (positive, summing to 1).
Tensor distributions(const Shape& shape, std::uint64_t seed) {
  std::vector<float> v = random_tensor(shape, seed, 0.2f, 1.f).to_vector();
  const Index cols = shape[-1];
  for (std::size_t r = 0; r < v.size(); r += cols) {
    double sum = 0;
    for (Index j = 0; j < cols; ++j) sum += v[r + j];
    for (Index j = 0; j < cols; ++j) v[r + j] = static_cast<float>(v[r + j] / sum);
  }
  return Tensor::from_vector(v, shape);
}

// y_pred = y_true + an offset whose magnitude avoids `kinks` by at least 0.05, so that a step of 1e-3 never
// crosses the derivative's jumps (MAE at 0, Huber at +-delta).
Tensor offset_from(const Tensor& y_true, std::uint64_t seed, const std::vector<double>& kinks) {
  std::vector<float> t = y_true.to_vector(), d = random_tensor(y_true.shape(), seed, -1.5f, 1.5f).to_vector();
  for (std::size_t i = 0; i < t.size(); ++i) {
    for (double k : kinks)
      if (std::abs(std::abs(d[i]) - k) < 0.05) d[i] = static_cast<float>((d[i] < 0 ? -1 : 1) * (k + 0.1));
    t[i] += d[i];
  }
  return Tensor::from_vector(t, y_true.shape());
}

// Predictions whose magnitude keeps at least 0.05 from 1, where a hinge with labels -1 / 1 has its kink.
Tensor hinge_predictions(const Shape& shape, std::uint64_t seed) {
  std::vector<float> v = random_tensor(shape, seed, -2.f, 2.f).to_vector();
  for (float& x : v)
    if (std::abs(std::abs(x) - 1.f) < 0.05f || std::abs(x) < 0.05f) x = x < 0 ? -1.5f : 1.5f;
  return Tensor::from_vector(v, shape);
}

std::vector<GradCase> cases() {
  const Tensor sparse = labels({0, 2, 1, 2, 0}, {5});
  const Tensor dense_labels = one_hot({0, 2, 1, 2, 0}, 3);
  const Tensor binary = Tensor::from_vector(std::vector<float>{1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0}, {4, 3});
  const Tensor signed_binary =
      Tensor::from_vector(std::vector<float>{1, -1, 1, -1, -1, 1, 1, 1, -1, -1, 1, -1}, {4, 3});
  const Tensor regress = random_tensor({4, 3}, 7, -1.f, 1.f);
  // Probabilities in [0.1, 1): away from the 1e-7 clipping and from log's steep region.
  const Tensor probs = random_tensor({5, 3}, 1, 0.1f, 1.f);
  return {
      {"SCCE_probs", R"({"class_name": "SparseCategoricalCrossentropy"})", sparse, probs},
      {"SCCE_logits", R"({"class_name": "SparseCategoricalCrossentropy", "config": {"from_logits": true}})", sparse,
       random_tensor({5, 3}, 2, -3.f, 3.f)},
      {"SCCE_rank3_float_labels", R"({"class_name": "SparseCategoricalCrossentropy"})",
       Tensor::from_vector(std::vector<float>{0, 3, 1, 2, 2, 0}, {2, 3}), random_tensor({2, 3, 4}, 3, 0.1f, 1.f)},
      {"CCE_probs", R"({"class_name": "CategoricalCrossentropy"})", dense_labels, probs},
      {"CCE_probs_label_smoothing", R"({"class_name": "CategoricalCrossentropy", "config": {"label_smoothing": 0.2}})",
       dense_labels, probs},
      {"CCE_soft_labels", R"({"class_name": "CategoricalCrossentropy"})", distributions({5, 3}, 4), probs},
      {"CCE_logits", R"({"class_name": "CategoricalCrossentropy", "config": {"from_logits": true}})", dense_labels,
       random_tensor({5, 3}, 5, -3.f, 3.f)},
      {"CCE_logits_unnormalised_labels",
       R"({"class_name": "CategoricalCrossentropy", "config": {"from_logits": true, "label_smoothing": 0.1}})",
       random_tensor({5, 3}, 6, 0.f, 1.f), random_tensor({5, 3}, 8, -3.f, 3.f)},
      {"BCE_probs", R"({"class_name": "BinaryCrossentropy"})", binary, random_tensor({4, 3}, 9, 0.1f, 0.9f)},
      {"BCE_probs_label_smoothing", R"({"class_name": "BinaryCrossentropy", "config": {"label_smoothing": 0.3}})",
       binary, random_tensor({4, 3}, 10, 0.1f, 0.9f)},
      {"BCE_logits", R"({"class_name": "BinaryCrossentropy", "config": {"from_logits": true}})", binary,
       random_tensor({4, 3}, 11, -4.f, 4.f)},
      {"MSE", R"("mse")", regress, random_tensor({4, 3}, 12, -1.f, 1.f)},
      {"MSE_rank3", R"("mse")", random_tensor({2, 3, 2}, 13), random_tensor({2, 3, 2}, 14)},
      {"MAE", R"("mae")", regress, offset_from(regress, 15, {0.0})},
      {"Huber", R"("huber")", regress, offset_from(regress, 16, {0.0, 1.0})},
      {"Huber_delta_0_5", R"({"class_name": "Huber", "config": {"delta": 0.5}})", regress,
       offset_from(regress, 17, {0.0, 0.5})},
      {"KLD", R"("kld")", random_tensor({4, 3}, 18, 0.f, 1.f), random_tensor({4, 3}, 19, 0.1f, 1.f)},
      {"SCCE_ignore_class", R"({"class_name": "SparseCategoricalCrossentropy", "config": {"ignore_class": -1}})",
       labels({0, -1, 1, 2, -1}, {5}), probs},
      {"SCCE_logits_ignore_class",
       R"({"class_name": "SparseCategoricalCrossentropy", "config": {"from_logits": true, "ignore_class": 1}})",
       sparse, random_tensor({5, 3}, 30, -3.f, 3.f)},
      // Margins 1 - t p stay at least 0.05 from 0 (the kink): |p| within [0.05, 0.95] or [1.05, 2].
      {"Hinge", R"("hinge")", binary, hinge_predictions({4, 3}, 31)},
      {"Hinge_signed_labels", R"("hinge")", signed_binary, hinge_predictions({4, 3}, 32)},
      {"SquaredHinge", R"("squared_hinge")", binary, random_tensor({4, 3}, 33, -2.f, 2.f)},
      {"CategoricalHinge", R"("categorical_hinge")", dense_labels, random_tensor({5, 3}, 34, -1.f, 1.f)},
      {"LogCosh", R"("log_cosh")", regress, random_tensor({4, 3}, 35, -3.f, 3.f)},
      {"Poisson", R"("poisson")", random_tensor({4, 3}, 36, 0.f, 4.f), random_tensor({4, 3}, 37, 0.2f, 3.f)},
      {"MSLE", R"("msle")", random_tensor({4, 3}, 38, 0.f, 3.f), random_tensor({4, 3}, 39, 0.1f, 3.f)},
      {"MAPE", R"("mape")", regress, offset_from(regress, 40, {0.0})},
      {"CosineSimilarity", R"("cosine_similarity")", regress, random_tensor({4, 3}, 41)},
      {"CosineSimilarity_rank3", R"("cosine_similarity")", random_tensor({2, 3, 4}, 42), random_tensor({2, 3, 4}, 43)},
      {"BinaryFocal", R"("binary_focal_crossentropy")", binary, random_tensor({4, 3}, 44, 0.1f, 0.9f)},
      {"BinaryFocal_balanced_smoothed",
       R"({"class_name": "BinaryFocalCrossentropy", "config": {"apply_class_balancing": true, "alpha": 0.3,
           "gamma": 1.5, "label_smoothing": 0.2}})",
       binary, random_tensor({4, 3}, 45, 0.1f, 0.9f)},
      {"BinaryFocal_logits", R"({"class_name": "BinaryFocalCrossentropy", "config": {"from_logits": true}})", binary,
       random_tensor({4, 3}, 46, -4.f, 4.f)},
      {"CategoricalFocal", R"("categorical_focal_crossentropy")", dense_labels, probs},
      {"CategoricalFocal_smoothed",
       R"({"class_name": "CategoricalFocalCrossentropy", "config": {"gamma": 3.0, "label_smoothing": 0.2}})",
       dense_labels, probs},
      {"CategoricalFocal_logits",
       R"({"class_name": "CategoricalFocalCrossentropy", "config": {"from_logits": true, "alpha": 0.7}})",
       dense_labels, random_tensor({5, 3}, 47, -3.f, 3.f)},
      {"Dice_over_the_batch", R"("dice")", binary, random_tensor({4, 3}, 48, 0.f, 1.f)},
      {"Dice_per_example", R"({"class_name": "Dice", "config": {"axis": [1, 2]}})",
       Tensor::from_vector(std::vector<float>{1, 0, 1, 1, 0, 0, 1, 0, 0, 1, 1, 0}, {2, 3, 2}),
       random_tensor({2, 3, 2}, 49, 0.f, 1.f)},
      {"Tversky_over_the_batch", R"({"class_name": "Tversky", "config": {"alpha": 0.7, "beta": 0.2}})", binary,
       random_tensor({4, 3}, 50, 0.f, 1.f)},
      {"Tversky_per_example", R"({"class_name": "Tversky", "config": {"alpha": 0.3, "axis": [-1]}})", binary,
       random_tensor({4, 3}, 51, 0.f, 1.f)},
  };
}

double weighted_loss(losses::Loss& loss, const GradCase& c, const Tensor& y_pred, const std::vector<float>& scale) {
  Tensor per_example(loss.per_example_shape(y_pred.shape()));
  loss.forward(c.y_true, y_pred, per_example);
  const std::vector<float> l = per_example.to_vector();
  double sum = 0;
  for (std::size_t i = 0; i < l.size(); ++i) sum += static_cast<double>(scale[i]) * l[i];
  return sum;
}

// Central differences with a step of 1e-3 on float32 inputs: the truncation error h^2 f''' / 6 stays below 4e-4
// for the inputs above (probabilities >= 0.1), and the float32 rounding of one per-example value contributes
// about 6e-8 |l| / h = 6e-5 |l|; hence |analytic - numeric| <= 2e-3 + 1e-2 |numeric|.
TEST(LossGradient, MatchesFiniteDifferences) {
  for (const GradCase& c : cases()) {
    SCOPED_TRACE(c.label);
    const losses::LossPtr loss = losses::loss_from_config(Config::parse_json(c.loss_json));
    const Shape per_example = loss->per_example_shape(c.y_pred.shape());
    const std::vector<float> scale = random_tensor(per_example, 99, 0.5f, 1.5f).to_vector();
    Tensor grad(c.y_pred.shape());
    loss->backward(c.y_true, c.y_pred, Tensor::from_vector(scale, per_example), grad);
    const std::vector<float> analytic = grad.to_vector();
    std::vector<float> x = c.y_pred.to_vector();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float x0 = x[i], hi = x0 + 1e-3f, lo = x0 - 1e-3f;
      x[i] = hi;
      const double l_hi = weighted_loss(*loss, c, Tensor::from_vector(x, c.y_pred.shape()), scale);
      x[i] = lo;
      const double l_lo = weighted_loss(*loss, c, Tensor::from_vector(x, c.y_pred.shape()), scale);
      x[i] = x0;
      const double numeric = (l_hi - l_lo) / (static_cast<double>(hi) - lo);
      EXPECT_NEAR(analytic[i], numeric, 2e-3 + 1e-2 * std::abs(numeric)) << "element " << i;
    }
  }
}

std::vector<float> softmax_rows(const std::vector<float>& z, Index cols) {
  std::vector<float> p(z.size());
  for (std::size_t r = 0; r < z.size(); r += cols) {
    double m = z[r], sum = 0;
    for (Index j = 1; j < cols; ++j) m = std::max<double>(m, z[r + j]);
    for (Index j = 0; j < cols; ++j) sum += std::exp(z[r + j] - m);
    for (Index j = 0; j < cols; ++j) p[r + j] = static_cast<float>(std::exp(z[r + j] - m) / sum);
  }
  return p;
}

// Fused d/d logits against the softmax's backward (dz_i = p_i (dp_i - sum_k p_k dp_k)) of the unfused d/d probs,
// with probabilities far from the 1e-7 clipping. Both are float32 computations of the same expression, the unfused
// one through -t / p and back, hence 1e-6 + 1e-4 relative.
TEST(LossGradient, FusedSoftmaxMatchesSoftmaxBackwardOfUnfusedGradient) {
  const Shape shape{6, 4};
  const std::vector<float> z = random_tensor(shape, 21, -2.f, 2.f).to_vector();
  const Tensor probs = Tensor::from_vector(softmax_rows(z, 4), shape);
  const Tensor sparse = labels({0, 3, 1, 2, 2, 0}, {6, 1});
  const Tensor dense = one_hot({0, 3, 1, 2, 2, 0}, 4);
  struct Fused {
    std::string label;
    losses::LossPtr loss;
    Tensor y_true;
  };
  const std::vector<Fused> fused = {
      {"SCCE", losses::SparseCategoricalCrossentropy(), sparse},
      {"SCCE_ignore_class", losses::SparseCategoricalCrossentropy({.ignore_class = 3}), sparse},
      {"CCE", losses::CategoricalCrossentropy(), dense},
      {"CCE_label_smoothing", losses::CategoricalCrossentropy({.label_smoothing = 0.1}), dense},
      {"CCE_soft_labels", losses::CategoricalCrossentropy(), distributions(shape, 22)},
      {"CCE_unnormalised_labels", losses::CategoricalCrossentropy(), random_tensor(shape, 23, 0.f, 1.f)},
  };
  const Tensor scale = random_tensor({6}, 24, 0.5f, 1.5f);
  for (const Fused& f : fused) {
    SCOPED_TRACE(f.label);
    ASSERT_TRUE(f.loss->can_fuse_softmax());
    Tensor dprobs(shape), dlogits(shape);
    f.loss->backward(f.y_true, probs, scale, dprobs);
    f.loss->backward_through_softmax(f.y_true, probs, scale, dlogits);
    const std::vector<float> p = probs.to_vector(), dp = dprobs.to_vector();
    std::vector<float> expected(p.size());
    for (std::size_t r = 0; r < p.size(); r += 4) {
      double dot = 0;
      for (int j = 0; j < 4; ++j) dot += static_cast<double>(p[r + j]) * dp[r + j];
      for (int j = 0; j < 4; ++j) expected[r + j] = static_cast<float>(p[r + j] * (dp[r + j] - dot));
    }
    testing::expect_near(dlogits, expected, 1e-6f, 1e-4f, f.label);
  }
}

TEST(LossGradient, FusedSoftmaxIsProbsMinusTarget) {
  const Tensor probs = Tensor::from_vector(std::vector<float>{0.7f, 0.2f, 0.1f, 0.25f, 0.25f, 0.5f}, {2, 3});
  const Tensor scale = Tensor::from_vector(std::vector<float>{0.5f, 2.f}, {2});
  Tensor g({2, 3});
  losses::SparseCategoricalCrossentropy().ptr()->backward_through_softmax(labels({0, 2}, {2}), probs, scale, g);
  testing::expect_near(g, {0.5f * -0.3f, 0.5f * 0.2f, 0.5f * 0.1f, 2 * 0.25f, 2 * 0.25f, 2 * -0.5f});
  // Label smoothing 0.3 over 3 classes: targets 0.8 / 0.1 / 0.1.
  losses::CategoricalCrossentropy cce({.label_smoothing = 0.3});
  cce->backward_through_softmax(one_hot({0, 2}, 3), probs, scale, g);
  testing::expect_near(g, {0.5f * -0.1f, 0.5f * 0.1f, 0.f, 2 * 0.15f, 2 * 0.15f, 2 * -0.3f});
}

// Where Keras clips a probability, the fused gradient (no clipping) and the unfused one (no gradient through the
// clipped entry) part ways: that is the documented difference, pinned here.
TEST(LossGradient, FusedSoftmaxSkipsClipping) {
  const Tensor probs = Tensor::from_vector(std::vector<float>{0.f, 0.4f, 0.6f}, {1, 3});
  const Tensor scale = Tensor::from_vector(std::vector<float>{1.f}, {1});
  losses::SparseCategoricalCrossentropy scce;
  Tensor fused({1, 3}), unfused({1, 3});
  scce->backward_through_softmax(labels({0}, {1}), probs, scale, fused);
  scce->backward(labels({0}, {1}), probs, scale, unfused);
  testing::expect_near(fused, {-1.f, 0.4f, 0.6f});
  EXPECT_EQ(unfused.to_vector()[0], 0.f);
}

TEST(LossGradient, OnlyProbabilityCrossentropiesFuseSoftmax) {
  EXPECT_TRUE(losses::SparseCategoricalCrossentropy()->can_fuse_softmax());
  EXPECT_TRUE(losses::CategoricalCrossentropy()->can_fuse_softmax());
  const std::vector<losses::LossPtr> others = {
      losses::SparseCategoricalCrossentropy({.from_logits = true}),
      losses::CategoricalCrossentropy({.from_logits = true}),
      losses::BinaryCrossentropy(), losses::MeanSquaredError(), losses::MeanAbsoluteError(), losses::Huber(),
      losses::KLDivergence()};
  const Tensor probs = Tensor::from_vector(std::vector<float>{0.5f, 0.5f}, {1, 2});
  const Tensor scale = Tensor::from_vector(std::vector<float>{1.f}, {1});
  for (const losses::LossPtr& loss : others) {
    SCOPED_TRACE(loss->type());
    EXPECT_FALSE(loss->can_fuse_softmax());
    Tensor g({1, 2});
    EXPECT_THROW(loss->backward_through_softmax(labels({0}, {1}), probs, scale, g), std::logic_error);
  }
}

}  // namespace
}  // namespace tower
