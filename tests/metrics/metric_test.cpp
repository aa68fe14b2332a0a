// The metric API around the numbers (those are pinned by keras_metrics_test.cpp): handles and options, names and
// configs as Keras writes them, state handling (reset, clone, merge) and the errors a user sees.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/metrics/metrics.h"
#include "testing/fixtures.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

Tensor floats(const std::vector<float>& v, Shape shape) { return Tensor::from_vector(v, std::move(shape)); }
Tensor ints(const std::vector<std::int32_t>& v) { return Tensor::from_vector(v, {static_cast<Index>(v.size())}); }

template <class E, class F>
void expect_throw_with(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

std::vector<metrics::MetricPtr> every_metric() {
  return {
      metrics::Mean({.name = "m"}),
      metrics::Accuracy(),
      metrics::BinaryAccuracy({.threshold = 0.3}),
      metrics::CategoricalAccuracy(),
      metrics::SparseCategoricalAccuracy({.name = "acc"}),
      metrics::TopKCategoricalAccuracy({.k = 2}),
      metrics::SparseTopKCategoricalAccuracy({.k = 3}),
      metrics::Precision({.thresholds = 0.4, .class_id = 1}),
      metrics::Recall({.top_k = 2}),
      metrics::AUC({.num_thresholds = 50, .curve = "pr", .summation_method = "Majoring", .from_logits = true}),
      metrics::MeanSquaredError(),
      metrics::MeanAbsoluteError(),
      metrics::TruePositives({.thresholds = 0.3}),
      metrics::FalsePositives(),
      metrics::TrueNegatives(),
      metrics::FalseNegatives({.thresholds = 0.9}),
      metrics::SensitivityAtSpecificity({.specificity = 0.5, .num_thresholds = 20, .class_id = 1}),
      metrics::SpecificityAtSensitivity({.sensitivity = 0.25}),
      metrics::PrecisionAtRecall({.recall = 0.75}),
      metrics::RecallAtPrecision({.precision = 0.6, .num_thresholds = 3}),
      metrics::F1Score({.average = "macro"}),
      metrics::FBetaScore({.average = "weighted", .beta = 2.0, .threshold = 0.4}),
      metrics::RootMeanSquaredError(),
      metrics::R2Score({.class_aggregation = "variance_weighted_average", .num_regressors = 2}),
      metrics::IoU({.num_classes = 3, .target_class_ids = {0, 2}, .ignore_class = 255}),
      metrics::MeanIoU({.num_classes = 4, .sparse_y_pred = false}),
      metrics::OneHotIoU({.num_classes = 3, .target_class_ids = {1}}),
      metrics::OneHotMeanIoU({.num_classes = 5}),
      metrics::BinaryIoU({.target_class_ids = {1}, .threshold = 0.3}),
      metrics::Hinge(),
      metrics::SquaredHinge({.name = "sq"}),
      metrics::CategoricalHinge(),
      metrics::Poisson(),
      metrics::KLDivergence(),
      metrics::LogCoshError(),
      metrics::MeanAbsolutePercentageError(),
      metrics::MeanSquaredLogarithmicError(),
      metrics::CosineSimilarity({.axis = 1}),
  };
}

bool is_iou(const std::string& type) { return type.find("IoU") != std::string::npos; }

TEST(MetricApi, DefaultNamesAreKeras) {
  EXPECT_EQ(metrics::Mean()->name(), "mean");
  EXPECT_EQ(metrics::Accuracy()->name(), "accuracy");
  EXPECT_EQ(metrics::BinaryAccuracy()->name(), "binary_accuracy");
  EXPECT_EQ(metrics::CategoricalAccuracy()->name(), "categorical_accuracy");
  EXPECT_EQ(metrics::SparseCategoricalAccuracy()->name(), "sparse_categorical_accuracy");
  EXPECT_EQ(metrics::TopKCategoricalAccuracy()->name(), "top_k_categorical_accuracy");
  EXPECT_EQ(metrics::SparseTopKCategoricalAccuracy()->name(), "sparse_top_k_categorical_accuracy");
  EXPECT_EQ(metrics::Precision()->name(), "precision");
  EXPECT_EQ(metrics::Recall()->name(), "recall");
  EXPECT_EQ(metrics::AUC()->name(), "auc");
  EXPECT_EQ(metrics::MeanSquaredError()->name(), "mean_squared_error");
  EXPECT_EQ(metrics::MeanAbsoluteError()->name(), "mean_absolute_error");
  EXPECT_EQ(metrics::TruePositives()->name(), "true_positives");
  EXPECT_EQ(metrics::FalseNegatives()->name(), "false_negatives");
  EXPECT_EQ(metrics::PrecisionAtRecall({.recall = 0.5})->name(), "precision_at_recall");
  EXPECT_EQ(metrics::F1Score()->name(), "f1_score");
  EXPECT_EQ(metrics::FBetaScore()->name(), "fbeta_score");
  EXPECT_EQ(metrics::RootMeanSquaredError()->name(), "root_mean_squared_error");
  EXPECT_EQ(metrics::R2Score()->name(), "r2_score");
  EXPECT_EQ(metrics::MeanIoU({.num_classes = 2})->name(), "mean_io_u");
  EXPECT_EQ(metrics::BinaryIoU()->name(), "binary_io_u");
  EXPECT_EQ(metrics::R2Score()->options().class_aggregation, "uniform_average");
  EXPECT_EQ(metrics::Hinge()->name(), "hinge");
  EXPECT_EQ(metrics::SquaredHinge()->name(), "squared_hinge");
  EXPECT_EQ(metrics::CategoricalHinge()->name(), "categorical_hinge");
  EXPECT_EQ(metrics::Poisson()->name(), "poisson");
  EXPECT_EQ(metrics::KLDivergence()->name(), "kl_divergence");
  EXPECT_EQ(metrics::LogCoshError()->name(), "logcosh");
  EXPECT_EQ(metrics::MeanAbsolutePercentageError()->name(), "mean_absolute_percentage_error");
  EXPECT_EQ(metrics::MeanSquaredLogarithmicError()->name(), "mean_squared_logarithmic_error");
  EXPECT_EQ(metrics::CosineSimilarity()->name(), "cosine_similarity");
  EXPECT_EQ(metrics::TopKCategoricalAccuracy()->options().k, 5);
  EXPECT_EQ(metrics::AUC()->options().num_thresholds, 200);
  const metrics::MetricPtr p = metrics::SparseCategoricalAccuracy();
  EXPECT_EQ(p->type(), "SparseCategoricalAccuracy");
}

TEST(MetricApi, ConfigRoundTripsForEveryMetric) {
  const auto all = every_metric();
  ASSERT_EQ(all.size(), metrics::metric_types().size());
  for (const metrics::MetricPtr& m : all) {
    SCOPED_TRACE(m->type());
    const Config c = m->get_config();
    EXPECT_EQ(c.at("class_name").as_string(), m->type());
    EXPECT_EQ(c.at("config").at("name").as_string(), m->name());
    // Keras' IoU metrics keep an int64 confusion matrix.
    EXPECT_EQ(c.at("config").at("dtype").as_string(), is_iou(m->type()) ? "int64" : "float32");
    const metrics::MetricPtr back = metrics::metric_from_config(Config::parse_json(c.to_json()));
    EXPECT_EQ(back->get_config(), c) << back->get_config().to_json() << " vs " << c.to_json();
    EXPECT_EQ(m->clone()->get_config(), c);
  }
  // AUC normalises Keras' spellings.
  const Config auc = metrics::AUC({.curve = "pr", .summation_method = "Majoring"})->get_config().at("config");
  EXPECT_EQ(auc.at("curve").as_string(), "PR");
  EXPECT_EQ(auc.at("summation_method").as_string(), "majoring");
}

TEST(MetricApi, KerasNamesAndAliases) {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"accuracy", "Accuracy"},
      {"binary_accuracy", "BinaryAccuracy"},
      {"categorical_accuracy", "CategoricalAccuracy"},
      {"sparse_categorical_accuracy", "SparseCategoricalAccuracy"},
      {"top_k_categorical_accuracy", "TopKCategoricalAccuracy"},
      {"sparse_top_k_categorical_accuracy", "SparseTopKCategoricalAccuracy"},
      {"precision", "Precision"},
      {"recall", "Recall"},
      {"auc", "AUC"},
      {"AUC", "AUC"},
      {"mse", "MeanSquaredError"},
      {"mean_squared_error", "MeanSquaredError"},
      {"mae", "MeanAbsoluteError"},
      {"MAE", "MeanAbsoluteError"},
      {"mean", "Mean"},
      {"true_positives", "TruePositives"},
      {"false_positives", "FalsePositives"},
      {"true_negatives", "TrueNegatives"},
      {"false_negatives", "FalseNegatives"},
      {"f1_score", "F1Score"},
      {"f_beta_score", "FBetaScore"},
      {"root_mean_squared_error", "RootMeanSquaredError"},
      {"r2_score", "R2Score"},
      {"binary_io_u", "BinaryIoU"},
  };
  for (const auto& [name, type] : names) EXPECT_EQ(metrics::metric_from_config(name)->type(), type) << name;
  expect_throw_with<ConfigError>([] { metrics::metric_from_config("sparse_categorical_acuracy"); },
                                 {"unknown metric", "did you mean 'sparse_categorical_accuracy'"});
}

// The configs Keras 3 writes (keras.metrics.X().get_config()) read back.
TEST(MetricApi, ReadsKerasConfigs) {
  const auto auc = metrics::metric_from_config(Config::parse_json(
      R"({"class_name": "AUC", "config": {"name": "auc", "dtype": "float32", "num_thresholds": 200, "curve": "ROC",
          "summation_method": "interpolation", "multi_label": false, "num_labels": null, "label_weights": null,
          "from_logits": false}})"));
  EXPECT_EQ(auc->name(), "auc");
  const auto precision = metrics::metric_from_config(Config::parse_json(
      R"({"class_name": "Precision", "config": {"name": "precision", "dtype": "float32", "thresholds": null,
          "top_k": null, "class_id": null}})"));
  EXPECT_EQ(precision->type(), "Precision");
  const auto topk = metrics::metric_from_config(Config::parse_json(
      R"({"class_name": "SparseTopKCategoricalAccuracy", "config": {"name": "top3", "dtype": "float32", "k": 3}})"));
  EXPECT_EQ(std::dynamic_pointer_cast<metrics::SparseTopKCategoricalAccuracyImpl>(topk)->options().k, 3);
}

TEST(MetricApi, UnsupportedKerasArgumentsAreConfigErrors) {
  expect_throw_with<ConfigError>(
      [] {
        metrics::metric_from_config(Config::parse_json(R"({"class_name": "AUC", "config": {"thresholds": [0.3]}})"));
      },
      {"AUC", "'thresholds'"});
  expect_throw_with<ConfigError>(
      [] {
        metrics::metric_from_config(
            Config::parse_json(R"({"class_name": "TruePositives", "config": {"thresholds": [0.3, 0.5]}})"));
      },
      {"TruePositives", "thresholds"});
  expect_throw_with<ConfigError>(
      [] {
        metrics::metric_from_config(
            Config::parse_json(R"({"class_name": "Precision", "config": {"thresholds": [0.3, 0.5]}})"));
      },
      {"Precision", "thresholds"});
  expect_throw_with<ConfigError>(
      [] { metrics::metric_from_config(Config::parse_json(R"({"class_name": "Recall", "config": {"top": 2}})")); },
      {"unknown argument 'top'", "did you mean 'top_k'"});
}

TEST(MetricApi, InvalidOptionsThrow) {
  EXPECT_THROW(metrics::AUC({.num_thresholds = 1}), std::invalid_argument);
  EXPECT_THROW(metrics::AUC({.curve = "PRGAIN"}), std::invalid_argument);
  EXPECT_THROW(metrics::AUC({.summation_method = "trapezoid"}), std::invalid_argument);
  EXPECT_THROW(metrics::Precision({.thresholds = 1.5}), std::invalid_argument);
  EXPECT_THROW(metrics::Recall({.top_k = 0}), std::invalid_argument);
  EXPECT_THROW(metrics::TopKCategoricalAccuracy({.k = 0}), std::invalid_argument);
  EXPECT_THROW(metrics::AUC({.num_labels = 3}), std::invalid_argument);
  EXPECT_THROW(metrics::AUC({.label_weights = std::vector<double>{1.0, -1.0}}), std::invalid_argument);
  EXPECT_THROW(metrics::R2Score({.class_aggregation = "median"}), std::invalid_argument);
  EXPECT_THROW(metrics::R2Score({.num_regressors = -1}), std::invalid_argument);
  EXPECT_THROW(metrics::FBetaScore({.beta = 0}), std::invalid_argument);
  EXPECT_THROW(metrics::IoU({.num_classes = 3}), std::invalid_argument);
  EXPECT_THROW(metrics::MeanIoU({.num_classes = 3, .axis = 1}), std::invalid_argument);
}

// Bad arguments name the metric and the value (issue 40's "a metric threshold outside [0, 1]", an unknown average).
TEST(MetricApi, BadArgumentsNameTheMetricAndTheValue) {
  expect_throw_with<std::invalid_argument>([] { metrics::TruePositives({.thresholds = 1.5}); },
                                           {"true_positives", "thresholds", "[0, 1]", "1.5"});
  expect_throw_with<std::invalid_argument>([] { metrics::FalseNegatives({.thresholds = -0.1}); },
                                           {"false_negatives", "-0.1"});
  expect_throw_with<std::invalid_argument>([] { metrics::F1Score({.threshold = 1.2}); },
                                           {"f1_score", "threshold", "1.2"});
  expect_throw_with<std::invalid_argument>([] { metrics::BinaryIoU({.threshold = 2.0}); },
                                           {"binary_io_u", "threshold", "2"});
  expect_throw_with<std::invalid_argument>([] { metrics::F1Score({.average = "mean"}); },
                                           {"f1_score", "average", "\"mean\""});
  expect_throw_with<std::invalid_argument>([] { metrics::FBetaScore({.average = "samples"}); },
                                           {"fbeta_score", "\"samples\""});
  expect_throw_with<std::invalid_argument>([] { metrics::PrecisionAtRecall({.recall = 1.5}); },
                                           {"precision_at_recall", "recall", "1.5"});
  expect_throw_with<std::invalid_argument>([] { metrics::SensitivityAtSpecificity(); },
                                           {"sensitivity_at_specificity", "specificity is required"});
  expect_throw_with<std::invalid_argument>([] { metrics::IoU({.num_classes = 3, .target_class_ids = {3}}); },
                                           {"io_u", "target class id 3"});
  expect_throw_with<std::invalid_argument>([] { metrics::MeanIoU(); }, {"mean_io_u", "num_classes"});
}

// Issue 40's "num_classes smaller than a label seen": labels in host memory are checked before they go anywhere.
TEST(MetricApi, IoUMetricsRejectLabelsOutsideNumClasses) {
  expect_throw_with<std::invalid_argument>(
      [] { metrics::MeanIoU({.num_classes = 3})->update_state(ints({0, 2, 3, 1}), ints({0, 1, 2, 1})); },
      {"mean_io_u", "label 3", "index 2", "num_classes 3"});
  expect_throw_with<std::invalid_argument>(
      [] { metrics::IoU({.num_classes = 2, .target_class_ids = {0}})->update_state(ints({0, 1}), ints({5, 1})); },
      {"io_u", "predicted class 5", "index 0", "num_classes 2"});
  expect_throw_with<std::invalid_argument>(
      [] {
        metrics::MeanIoU({.num_classes = 2, .sparse_y_pred = false})
            ->update_state(floats({1, -2}, {2}), floats({0.1f, 0.9f, 0.8f, 0.2f}, {2, 2}));
      },
      {"mean_io_u", "label -2", "index 1"});
  expect_throw_with<std::invalid_argument>(
      [] { metrics::BinaryIoU()->update_state(floats({1, 2}, {2}), floats({0.1f, 0.9f}, {2})); },
      {"binary_io_u", "label 2", "num_classes 2"});
  // ignore_class may lie outside the classes: it is skipped, not counted.
  metrics::MeanIoU ignoring({.num_classes = 2, .ignore_class = 255});
  EXPECT_NO_THROW(ignoring->update_state(ints({0, 255, 1}), ints({0, 1, 1})));
  EXPECT_EQ(ignoring->confusion_matrix(), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_NEAR(ignoring->result(), 1.0, 1e-6);
}

TEST(MetricApi, VectorResultsNeedResults) {
  metrics::F1Score f1;
  f1->update_state(floats({1, 0, 0, 1}, {2, 2}), floats({0.9f, 0.1f, 0.4f, 0.6f}, {2, 2}));
  EXPECT_EQ(f1->results().size(), 2u);
  EXPECT_NEAR(f1->results()[0], 1.0, 1e-6);
  expect_throw_with<std::logic_error>([&] { (void)f1->result(); }, {"f1_score", "average"});
  metrics::R2Score per_output({.class_aggregation = std::nullopt});
  per_output->update_state(floats({1, 2, 3, 5}, {2, 2}), floats({1, 2, 3, 5}, {2, 2}));
  EXPECT_EQ(per_output->results(), (std::vector<double>{1.0, 1.0}));
  expect_throw_with<std::logic_error>([&] { (void)per_output->result(); }, {"r2_score", "class_aggregation"});
}

TEST(Mean, UpdateWithWeights) {
  metrics::Mean mean;
  EXPECT_EQ(mean->result(), 0.0);
  mean->update(1.0);
  mean->update(4.0, 2.0);
  EXPECT_DOUBLE_EQ(mean->result(), 3.0);
  // Keras' Mean on [1, 3, 5, 7] with weights [1, 1, 0, 0] is 2.
  mean->reset_state();
  mean->update_state(floats({1, 3, 5, 7}, {4}), floats({1, 1, 0, 0}, {4}));
  EXPECT_DOUBLE_EQ(mean->result(), 2.0);
  // A scalar is one example; values [N, d] with weights of their shape weight each value.
  mean->reset_state();
  mean->update_state(Tensor::full({}, 5.f));
  EXPECT_DOUBLE_EQ(mean->result(), 5.0);
  mean->reset_state();
  mean->update_state(floats({1, 3, 2, 2}, {2, 2}), floats({1, 0, 1, 1}, {2, 2}));
  // total = mean(1*1, 3*0) + mean(2, 2) = 0.5 + 2; count = mean(1, 0) + mean(1, 1) = 1.5
  EXPECT_DOUBLE_EQ(mean->result(), 2.5 / 1.5);
}

TEST(Mean, TakesValuesNotPredictions) {
  const metrics::MetricPtr mean = metrics::Mean();
  expect_throw_with<std::invalid_argument>([&] { mean->update_state(floats({1}, {1}), floats({1}, {1})); },
                                           {"update_state(values"});
  expect_throw_with<std::invalid_argument>(
      [] { metrics::Mean()->update_state(floats({1, 2, 3}, {3}), floats({1, 2}, {2})); }, {"sample_weight", "(2,)"});
}

TEST(MetricApi, CloneStartsEmptyAndIsIndependent) {
  metrics::SparseCategoricalAccuracy acc;
  acc->update_state(ints({1, 0}), floats({0.1f, 0.9f, 0.2f, 0.8f}, {2, 2}));
  EXPECT_DOUBLE_EQ(acc->result(), 0.5);
  const metrics::MetricPtr copy = acc->clone();
  EXPECT_EQ(copy->result(), 0.0);
  copy->update_state(ints({1}), floats({0.1f, 0.9f}, {1, 2}));
  EXPECT_DOUBLE_EQ(copy->result(), 1.0);
  EXPECT_DOUBLE_EQ(acc->result(), 0.5);
}

TEST(MetricApi, MergeRequiresTheSameTypeAndConfiguration) {
  metrics::BinaryAccuracy a, b({.threshold = 0.7});
  expect_throw_with<std::invalid_argument>([&] { a->merge_state(*b); }, {"configured differently"});
  expect_throw_with<std::invalid_argument>([&] { a->merge_state(*metrics::Accuracy()); },
                                           {"Accuracy", "BinaryAccuracy"});
  expect_throw_with<std::invalid_argument>([&] { metrics::Precision()->merge_state(*metrics::Recall()); }, {"Recall"});
  metrics::AUC auc;
  expect_throw_with<std::invalid_argument>([&] { auc->merge_state(*metrics::AUC({.num_thresholds = 10})); },
                                           {"configured differently"});
  // The name may differ (replicas of a renamed metric still merge).
  metrics::BinaryAccuracy c({.name = "other"});
  EXPECT_NO_THROW(a->merge_state(*c));
}

TEST(MetricApi, ShapeMismatchesNameBothShapes) {
  expect_throw_with<std::invalid_argument>(
      [] { metrics::CategoricalAccuracy()->update_state(floats({1, 0}, {1, 2}), floats({1, 0, 0}, {1, 3})); },
      {"categorical_accuracy", "(1, 2)", "(1, 3)"});
  expect_throw_with<std::invalid_argument>(
      [] { metrics::SparseCategoricalAccuracy()->update_state(ints({1, 0, 1}), floats({1, 0, 0, 1}, {2, 2})); },
      {"(3,)", "(2, 2)"});
  expect_throw_with<std::invalid_argument>(
      [] { metrics::AUC()->update_state(floats({1, 0}, {2}), floats({1, 0, 0}, {3})); }, {"auc", "(2,)", "(3,)"});
  expect_throw_with<std::invalid_argument>(
      [] { metrics::MeanSquaredError()->update_state(floats({1, 0}, {1, 2}), floats({1, 0, 0}, {1, 3})); },
      {"mean_squared_error", "(1, 2)", "(1, 3)"});
  expect_throw_with<std::invalid_argument>(
      [] { metrics::Accuracy()->update_state(floats({1, 0}, {2}), floats({1, 0}, {2}), floats({1, 1, 1}, {3})); },
      {"sample_weight", "2 examples"});
}

TEST(MetricApi, SparseMetricsRejectBadLabels) {
  const Tensor y_pred = floats({0.2f, 0.3f, 0.5f, 0.6f, 0.3f, 0.1f}, {2, 3});
  expect_throw_with<std::invalid_argument>(
      [&] { metrics::SparseCategoricalAccuracy()->update_state(ints({0, 3}), y_pred); },
      {"label 3", "index 1", "3 classes"});
  expect_throw_with<std::invalid_argument>(
      [&] { metrics::SparseTopKCategoricalAccuracy()->update_state(floats({-1, 0}, {2}), y_pred); },
      {"label -1", "index 0"});
  expect_throw_with<std::invalid_argument>(
      [&] { metrics::SparseCategoricalAccuracy()->update_state(floats({0, 0.5f}, {2}), y_pred); }, {"label 0.5"});
}

TEST(MetricApi, TopKCountsTiesAtTheBoundary) {
  // Scores [0.4, 0.4, 0.2]: with k = 1 both tied classes are "in the top 1" (TensorFlow's in_top_k).
  const Tensor y_pred = floats({0.4f, 0.4f, 0.2f}, {1, 3});
  metrics::SparseTopKCategoricalAccuracy top1({.k = 1});
  top1->update_state(ints({1}), y_pred);
  EXPECT_DOUBLE_EQ(top1->result(), 1.0);
  // argmax takes the first of the tied classes.
  metrics::SparseCategoricalAccuracy acc;
  acc->update_state(ints({1}), y_pred);
  EXPECT_DOUBLE_EQ(acc->result(), 0.0);
}

TEST(MetricApi, PrecisionAndRecallByHand) {
  // Decisions at 0.5: predicted positive [1, 0, 1, 1]; labels [1, 1, 0, 1] -> tp 2, fp 1, fn 1.
  const Tensor y_true = floats({1, 1, 0, 1}, {4});
  const Tensor y_pred = floats({0.9f, 0.2f, 0.6f, 0.7f}, {4});
  metrics::Precision precision;
  metrics::Recall recall;
  precision->update_state(y_true, y_pred);
  recall->update_state(y_true, y_pred);
  EXPECT_DOUBLE_EQ(precision->result(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(recall->result(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(precision->true_positives(), 2.0);
  EXPECT_DOUBLE_EQ(precision->false_positives(), 1.0);
  EXPECT_DOUBLE_EQ(recall->false_negatives(), 1.0);
}

TEST(MetricApi, PerfectAucIsOne) {
  metrics::AUC auc;
  auc->update_state(floats({0, 0, 1, 1}, {4}), floats({0.1f, 0.3f, 0.6f, 0.9f}, {4}));
  EXPECT_NEAR(auc->result(), 1.0, 1e-12);
  metrics::AUC pr({.curve = "PR"});
  pr->update_state(floats({0, 0, 1, 1}, {4}), floats({0.1f, 0.3f, 0.6f, 0.9f}, {4}));
  EXPECT_NEAR(pr->result(), 1.0, 1e-12);
}

// Every metric Tower has goes the way Keras' goes (Metric._direction, which mode "auto" of the monitoring callbacks
// reads; tests/reference/make_metric_direction_fixtures.py), and a metric added later must say too.
TEST(MetricApi, EveryMetricHasKerasDirection) {
  const Config doc = testing::read_json_fixture("losses_metrics/metric_directions.json");
  const auto all = every_metric();
  ASSERT_EQ(all.size(), metrics::metric_types().size());
  for (const metrics::MetricPtr& m : all) {
    SCOPED_TRACE(m->type());
    ASSERT_TRUE(doc.at("directions").contains(m->type())) << "add it to make_metric_direction_fixtures.py";
    const Config& keras = doc.at("directions").at(m->type());
    const metrics::Direction want = keras.is_null()              ? metrics::Direction::unknown
                                    : keras.as_string() == "up" ? metrics::Direction::up
                                                                : metrics::Direction::down;
    EXPECT_EQ(m->direction(), want);
    EXPECT_EQ(m->clone()->direction(), want);
  }
}

}  // namespace
}  // namespace tower
