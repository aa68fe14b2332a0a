// Metrics against Keras itself: tests/reference/losses_metrics/metrics.json, written by
// make_loss_metric_fixtures.py (Keras 3 on TensorFlow), holds for each case a metric config, two batches and
// Keras' result() after update_state on both, without and with sample weights (a list where Keras' result() is one
// value per class, compared with results()). Each case is one test,
// MetricKeras.Matches/<case>, which also checks merge_state: one instance per batch, merged, equals one instance
// that saw both (the per-replica aggregation a strategy does).
//
// Tolerance: |got - want| <= 1e-6 + 1e-5 |want|. Keras accumulates in float32 (a few roundings of 6e-8 relative
// each, and AUC's float32 sums over 200 thresholds), Tower in double; the counts themselves are exact on both sides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "api/metrics/metrics.h"
#include "testing/fixtures.h"

namespace tower {
namespace {

constexpr double kAtol = 1e-6, kRtol = 1e-5;

const Config& fixtures() {
  static const Config doc = testing::read_json_fixture("losses_metrics/metrics.json");
  return doc;
}

Tensor read_tensor(const Config& c) { return testing::fixture_tensor(c); }

// Empty when the file cannot be read (FixtureFileCoversEveryMetric then fails with the reason), so test discovery
// never throws.
std::vector<std::string> case_names() {
  try {
    return testing::fixture_case_names(fixtures());
  } catch (const std::exception&) {
    return {};
  }
}

const Config& find_case(const std::string& name) { return testing::fixture_case(fixtures(), name); }

// Feeds one fixture batch to `metric`, with or without its sample weights.
void update(metrics::Metric& metric, const Config& batch, bool weighted) {
  const Tensor w = weighted ? read_tensor(batch.at("sample_weight")) : Tensor();
  if (batch.contains("values")) {
    auto* mean = dynamic_cast<metrics::MeanImpl*>(&metric);
    ASSERT_NE(mean, nullptr) << "a values batch for a " << metric.type();
    mean->update_state(read_tensor(batch.at("values")), w);
    return;
  }
  metric.update_state(read_tensor(batch.at("y_true")), read_tensor(batch.at("y_pred")), w);
}

class MetricKeras : public ::testing::TestWithParam<std::string> {};

// Keras' result(): one number, or a list where Keras gives one value per class.
std::vector<double> expected(const Config& c) {
  if (!c.is_list()) return {c.as_double()};
  std::vector<double> v;
  for (const Config& x : c.as_list()) v.push_back(x.as_double());
  return v;
}

void expect_results(const metrics::Metric& metric, const std::vector<double>& want, double atol, double rtol,
                    const std::string& what) {
  const std::vector<double> got = metric.results();
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], atol + rtol * std::abs(want[i])) << what << ", value " << i;
}

TEST_P(MetricKeras, Matches) {
  const Config& c = find_case(GetParam());
  const Config::List& batches = c.at("batches").as_list();
  for (const bool weighted : {false, true}) {
    SCOPED_TRACE(weighted ? "with sample weights" : "without sample weights");
    const std::vector<double> want = expected(c.at(weighted ? "weighted_result" : "result"));
    const metrics::MetricPtr metric = metrics::metric_from_config(c.at("metric_config"));
    if (want.size() == 1) {
      EXPECT_EQ(metric->result(), 0.0) << "before any update";
    }
    for (const Config& b : batches) update(*metric, b, weighted);
    expect_results(*metric, want, kAtol, kRtol, "result");

    // merge_state: one replica per batch, merged into the first.
    std::vector<metrics::MetricPtr> replicas;
    for (const Config& b : batches) {
      replicas.push_back(metric->clone());
      update(*replicas.back(), b, weighted);
    }
    for (std::size_t i = 1; i < replicas.size(); ++i) replicas[0]->merge_state(*replicas[i]);
    expect_results(*replicas[0], metric->results(), 1e-12, 1e-12, "merged");

    metric->reset_state();
    if (want.size() == 1) {
      EXPECT_EQ(metric->result(), 0.0) << "after reset_state";
    }
    for (const Config& b : batches) update(*metric, b, weighted);
    expect_results(*metric, want, kAtol, kRtol, "after reset_state and the same updates");
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(MetricKeras);
INSTANTIATE_TEST_SUITE_P(Metric, MetricKeras, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(MetricKeras, FixtureFileCoversEveryMetric) {
  std::vector<std::string> seen;
  for (const Config& c : fixtures().at("cases").as_list())
    seen.push_back(c.at("metric_config").at("class_name").as_string());
  for (const std::string& type : metrics::metric_types())
    EXPECT_NE(std::find(seen.begin(), seen.end(), type), seen.end()) << type << " has no Keras fixture";
}

}  // namespace
}  // namespace tower
