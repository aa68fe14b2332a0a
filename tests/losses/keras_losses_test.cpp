// Losses against Keras itself: tests/reference/losses_metrics/losses.json, written by
// make_loss_metric_fixtures.py (Keras 3 on TensorFlow), holds for each case a loss config, y_true, y_pred, sample
// weights, and what Keras computed: the per-example values, the sum_over_batch_size loss with and without the
// weights, and the gradients of both with respect to y_pred. Each case is one test, LossKeras.Matches/<case>:
//
//   loss_from_config -> forward, compare per_example -> reduce as the training loop does (sum(w * l) / count),
//   compare -> backward with scale = w / count, compare the gradient.
//
// Tolerances. Values: |got - want| <= 1e-6 + 1e-5 |want|: Keras computes in float32 through a few ops (each
// rounding by up to 6e-8 relative), Tower in double rounded once to float32, so they agree to a few float32 ulps.
// Gradients: |got - want| <= 1e-6 + 1e-4 |want|: TensorFlow's gradients divide by probabilities and renormalise in
// float32, which amplifies its rounding (1 / p for p near 0.03 costs about 1e-5 relative); the clipped entries,
// exactly 0 on both sides, are unaffected.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "api/losses/losses.h"
#include "testing/fixtures.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

constexpr float kValueAtol = 1e-6f, kValueRtol = 1e-5f;
constexpr float kGradAtol = 1e-6f, kGradRtol = 1e-4f;

const Config& fixtures() {
  static const Config doc = testing::read_json_fixture("losses_metrics/losses.json");
  return doc;
}

Tensor read_tensor(const Config& c) { return testing::fixture_tensor(c); }

// Empty when the file cannot be read (FixtureFileCoversEveryLoss then fails with the reason), so test discovery
// never throws.
std::vector<std::string> case_names() {
  try {
    return testing::fixture_case_names(fixtures());
  } catch (const std::exception&) {
    return {};
  }
}

const Config& find_case(const std::string& name) { return testing::fixture_case(fixtures(), name); }

class LossKeras : public ::testing::TestWithParam<std::string> {};

TEST_P(LossKeras, Matches) {
  const Config& c = find_case(GetParam());
  const losses::LossPtr loss = losses::loss_from_config(c.at("loss_config"));
  const Tensor y_true = read_tensor(c.at("y_true")), y_pred = read_tensor(c.at("y_pred"));
  const std::vector<float> w = read_tensor(c.at("sample_weight")).to_vector();

  loss->check_shapes(y_true.shape(), y_pred.shape());
  Tensor per_example(loss->per_example_shape(y_pred.shape()));
  loss->forward(y_true, y_pred, per_example);
  testing::expect_near(per_example, read_tensor(c.at("per_example")), kValueAtol, kValueRtol, "per_example");

  // The training loop's reduction: each example's weight covers its positions ([N] or [N, 1] weights).
  const std::vector<float> l = per_example.to_vector();
  const Index count = per_example.numel(), positions = count / static_cast<Index>(w.size());
  std::vector<float> plain_scale(count), weighted_scale(count);
  double sum = 0, weighted_sum = 0;
  for (Index i = 0; i < count; ++i) {
    const double wi = w[i / positions];
    sum += l[i];
    weighted_sum += wi * l[i];
    plain_scale[i] = static_cast<float>(1.0 / count);
    weighted_scale[i] = static_cast<float>(wi / count);
  }
  const double want = c.at("loss").as_double(), want_weighted = c.at("weighted_loss").as_double();
  EXPECT_NEAR(sum / count, want, kValueAtol + kValueRtol * std::abs(want)) << "loss";
  EXPECT_NEAR(weighted_sum / count, want_weighted, kValueAtol + kValueRtol * std::abs(want_weighted))
      << "weighted_loss";

  Tensor grad(y_pred.shape());
  loss->backward(y_true, y_pred, Tensor::from_vector(plain_scale, per_example.shape()), grad);
  testing::expect_near(grad, read_tensor(c.at("grad")), kGradAtol, kGradRtol, "grad");
  loss->backward(y_true, y_pred, Tensor::from_vector(weighted_scale, per_example.shape()), grad);
  testing::expect_near(grad, read_tensor(c.at("weighted_grad")), kGradAtol, kGradRtol, "weighted_grad");
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LossKeras);
INSTANTIATE_TEST_SUITE_P(Loss, LossKeras, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(LossKeras, FixtureFileCoversEveryLoss) {
  std::vector<std::string> seen;
  for (const Config& c : fixtures().at("cases").as_list())
    seen.push_back(c.at("loss_config").at("class_name").as_string());
  for (const std::string& type : losses::loss_types())
    EXPECT_NE(std::find(seen.begin(), seen.end(), type), seen.end()) << type << " has no Keras fixture";
}

}  // namespace
}  // namespace tower
