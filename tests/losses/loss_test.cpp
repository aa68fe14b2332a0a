// The loss API around the numbers (those are pinned by keras_losses_test.cpp and loss_gradient_test.cpp): handles
// and options, names and configs as Keras writes them, shapes, and the errors a user sees.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/losses/losses.h"
#include "testing/layer_test.h"

namespace tower {
namespace {

Tensor int_labels(const std::vector<std::int32_t>& v) {
  return Tensor::from_vector(v, {static_cast<Index>(v.size())});
}

// Runs f, expecting std::invalid_argument whose message contains every one of `parts`.
template <class F>
void expect_invalid_argument(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

template <class F>
void expect_config_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const ConfigError& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(LossApi, HandlesTakeOptionsAndConvertToLossPtr) {
  losses::SparseCategoricalCrossentropy scce;
  EXPECT_FALSE(scce->options().from_logits);
  EXPECT_EQ(scce->name(), "sparse_categorical_crossentropy");
  EXPECT_EQ(scce->type(), "SparseCategoricalCrossentropy");
  losses::CategoricalCrossentropy cce({.from_logits = true, .label_smoothing = 0.1, .name = "cce"});
  const losses::LossPtr p = cce;
  EXPECT_EQ(p->name(), "cce");
  EXPECT_EQ(p.get(), cce.ptr().get());
  EXPECT_DOUBLE_EQ(cce->options().label_smoothing, 0.1);
  EXPECT_EQ(losses::Huber()->name(), "huber_loss");
  EXPECT_EQ(losses::KLDivergence()->name(), "kl_divergence");
  EXPECT_EQ(losses::BinaryCrossentropy()->name(), "binary_crossentropy");
  EXPECT_EQ(losses::MeanSquaredError()->name(), "mean_squared_error");
  EXPECT_EQ(losses::MeanAbsoluteError()->name(), "mean_absolute_error");
  EXPECT_EQ(losses::BinaryFocalCrossentropy()->name(), "binary_focal_crossentropy");
  EXPECT_EQ(losses::CategoricalFocalCrossentropy()->name(), "categorical_focal_crossentropy");
  EXPECT_EQ(losses::Hinge()->name(), "hinge");
  EXPECT_EQ(losses::SquaredHinge()->name(), "squared_hinge");
  EXPECT_EQ(losses::CategoricalHinge()->name(), "categorical_hinge");
  EXPECT_EQ(losses::LogCosh()->name(), "log_cosh");
  EXPECT_EQ(losses::Poisson()->name(), "poisson");
  EXPECT_EQ(losses::MeanSquaredLogarithmicError()->name(), "mean_squared_logarithmic_error");
  EXPECT_EQ(losses::MeanAbsolutePercentageError()->name(), "mean_absolute_percentage_error");
  EXPECT_EQ(losses::CosineSimilarity()->name(), "cosine_similarity");
  EXPECT_EQ(losses::Dice()->name(), "dice");
  EXPECT_EQ(losses::Tversky()->name(), "tversky");
  EXPECT_DOUBLE_EQ(losses::BinaryFocalCrossentropy()->options().alpha, 0.25);
  EXPECT_DOUBLE_EQ(losses::CategoricalFocalCrossentropy()->options().gamma, 2.0);
  EXPECT_DOUBLE_EQ(losses::Tversky()->options().beta, 0.5);
  EXPECT_FALSE(losses::Dice()->options().axis.has_value());
}

TEST(LossApi, InvalidOptionsThrow) {
  expect_invalid_argument([] { losses::CategoricalCrossentropy({.label_smoothing = 1.5}); }, {"label_smoothing"});
  expect_invalid_argument([] { losses::BinaryCrossentropy({.label_smoothing = -0.1}); }, {"label_smoothing"});
  expect_invalid_argument([] { losses::Huber({.delta = -1}); }, {"delta"});
}

// Keras' ranges for the focal losses' arguments (gamma >= 0, alpha and label_smoothing in [0, 1]): the loss's name
// and the value given.
TEST(LossApi, FocalArgumentsOutsideKerasRangesThrow) {
  expect_invalid_argument([] { losses::BinaryFocalCrossentropy({.gamma = -0.5}); },
                          {"binary_focal_crossentropy", "gamma", "-0.5"});
  expect_invalid_argument([] { losses::BinaryFocalCrossentropy({.alpha = 1.25, .name = "focal_head"}); },
                          {"focal_head", "alpha", "1.25"});
  expect_invalid_argument([] { losses::BinaryFocalCrossentropy({.alpha = -0.1}); }, {"alpha", "-0.1"});
  expect_invalid_argument([] { losses::BinaryFocalCrossentropy({.label_smoothing = 2}); }, {"label_smoothing", "2"});
  expect_invalid_argument([] { losses::CategoricalFocalCrossentropy({.gamma = -1}); },
                          {"categorical_focal_crossentropy", "gamma", "-1"});
  expect_invalid_argument([] { losses::CategoricalFocalCrossentropy({.alpha = 3}); }, {"alpha", "3"});
  expect_invalid_argument(
      [] {
        losses::loss_from_config(Config::parse_json(R"({"class_name": "BinaryFocalCrossentropy",
            "config": {"gamma": -2.0}})"));
      },
      {"binary_focal_crossentropy", "gamma", "-2"});
  EXPECT_NO_THROW(losses::BinaryFocalCrossentropy({.alpha = 0, .gamma = 0}));
  EXPECT_NO_THROW(losses::CategoricalFocalCrossentropy({.alpha = 1, .gamma = 0}));
}

// Axes other than the ones Tower reduces: the loss's name, the axes and the shape.
TEST(LossApi, UnsupportedAxesThrow) {
  expect_invalid_argument([] { losses::CosineSimilarity({.axis = 1})->per_example_shape({4, 3, 2}); },
                          {"cosine_similarity", "axis 1", "(4, 3, 2)"});
  EXPECT_EQ(losses::CosineSimilarity({.axis = 2})->per_example_shape({4, 3, 2}), (Shape{4, 3}));
  expect_invalid_argument([] { losses::Dice({.axis = std::vector<int>{1}})->per_example_shape({4, 3, 2}); },
                          {"dice", "axis (1)", "(4, 3, 2)"});
  expect_invalid_argument([] { losses::Tversky({.axis = std::vector<int>{0, 1}})->per_example_shape({4, 3}); },
                          {"tversky", "axis (0, 1)"});
  EXPECT_EQ(losses::Dice({.axis = std::vector<int>{2, -2}})->per_example_shape({4, 3, 2}), (Shape{4}));
  EXPECT_EQ(losses::Dice()->per_example_shape({4, 3, 2}), (Shape{4}));
}

TEST(LossApi, KerasNamesAndAliases) {
  const std::vector<std::pair<std::string, std::string>> names = {
      {"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"},
      {"categorical_crossentropy", "CategoricalCrossentropy"},
      {"binary_crossentropy", "BinaryCrossentropy"},
      {"bce", "BinaryCrossentropy"},
      {"mse", "MeanSquaredError"},
      {"MSE", "MeanSquaredError"},
      {"mean_squared_error", "MeanSquaredError"},
      {"mae", "MeanAbsoluteError"},
      {"mean_absolute_error", "MeanAbsoluteError"},
      {"huber", "Huber"},
      {"kld", "KLDivergence"},
      {"kl_divergence", "KLDivergence"},
      {"SparseCategoricalCrossentropy", "SparseCategoricalCrossentropy"},
      {"Huber", "Huber"},
      {"hinge", "Hinge"},
      {"squared_hinge", "SquaredHinge"},
      {"categorical_hinge", "CategoricalHinge"},
      {"log_cosh", "LogCosh"},
      {"poisson", "Poisson"},
      {"msle", "MeanSquaredLogarithmicError"},
      {"MSLE", "MeanSquaredLogarithmicError"},
      {"mean_squared_logarithmic_error", "MeanSquaredLogarithmicError"},
      {"mape", "MeanAbsolutePercentageError"},
      {"mean_absolute_percentage_error", "MeanAbsolutePercentageError"},
      {"cosine_similarity", "CosineSimilarity"},
      {"binary_focal_crossentropy", "BinaryFocalCrossentropy"},
      {"categorical_focal_crossentropy", "CategoricalFocalCrossentropy"},
      {"dice", "Dice"},
      {"tversky", "Tversky"},
  };
  for (const auto& [name, type] : names) EXPECT_EQ(losses::loss_from_config(name)->type(), type) << name;
  expect_config_error([] { losses::loss_from_config("sparse_categorical_crossentropi"); },
                      {"unknown loss 'sparse_categorical_crossentropi'",
                       "did you mean 'sparse_categorical_crossentropy'"});
  expect_config_error([] { losses::loss_from_config(Config(3)); }, {"a loss is a name or {class_name, config}"});
}

TEST(LossApi, ConfigRoundTripsForEveryLoss) {
  const std::vector<losses::LossPtr> all = {
      losses::SparseCategoricalCrossentropy({.from_logits = true, .name = "a"}),
      losses::CategoricalCrossentropy({.from_logits = true, .label_smoothing = 0.25, .name = "b"}),
      losses::BinaryCrossentropy({.label_smoothing = 0.5}),
      losses::MeanSquaredError({.name = "m"}),
      losses::MeanAbsoluteError(),
      losses::Huber({.delta = 0.3}),
      losses::KLDivergence(),
      losses::BinaryFocalCrossentropy({.apply_class_balancing = true, .alpha = 0.4, .gamma = 1.5,
                                       .from_logits = true, .label_smoothing = 0.1}),
      losses::CategoricalFocalCrossentropy({.alpha = 0.5, .gamma = 3.0, .label_smoothing = 0.2}),
      losses::Hinge(),
      losses::SquaredHinge(),
      losses::CategoricalHinge(),
      losses::LogCosh(),
      losses::Poisson(),
      losses::MeanSquaredLogarithmicError(),
      losses::MeanAbsolutePercentageError(),
      losses::CosineSimilarity({.axis = 2}),
      losses::Dice({.axis = std::vector<int>{1, 2}}),
      losses::Tversky({.alpha = 0.7, .beta = 0.3}),
      losses::SparseCategoricalCrossentropy({.ignore_class = 255, .name = "c"}),
  };
  ASSERT_EQ(all.size() - 1, losses::loss_types().size());
  for (const losses::LossPtr& loss : all) {
    SCOPED_TRACE(loss->type());
    const Config c = loss->get_config();
    EXPECT_EQ(c.at("class_name").as_string(), loss->type());
    EXPECT_EQ(c.at("config").at("name").as_string(), loss->name());
    EXPECT_EQ(c.at("config").at("reduction").as_string(), "sum_over_batch_size");
    const losses::LossPtr back = losses::loss_from_config(Config::parse_json(c.to_json()));
    EXPECT_EQ(back->type(), loss->type());
    EXPECT_EQ(back->name(), loss->name());
    EXPECT_EQ(back->get_config(), c) << back->get_config().to_json() << " vs " << c.to_json();
  }
}

// The configs Keras 3 writes (keras.losses.X().get_config()) read back as the same loss.
TEST(LossApi, ReadsKerasConfigs) {
  auto scce = losses::loss_from_config(Config::parse_json(
      R"({"class_name": "SparseCategoricalCrossentropy", "config": {"name": "sparse_categorical_crossentropy",
          "reduction": "sum_over_batch_size", "from_logits": true, "ignore_class": null}})"));
  EXPECT_TRUE(std::dynamic_pointer_cast<losses::SparseCategoricalCrossentropyImpl>(scce)->options().from_logits);
  auto cce = losses::loss_from_config(Config::parse_json(
      R"({"class_name": "CategoricalCrossentropy", "config": {"name": "categorical_crossentropy",
          "reduction": "sum_over_batch_size", "from_logits": false, "label_smoothing": 0.1, "axis": -1}})"));
  EXPECT_DOUBLE_EQ(std::dynamic_pointer_cast<losses::CategoricalCrossentropyImpl>(cce)->options().label_smoothing, 0.1);
  auto huber = losses::loss_from_config(Config::parse_json(
      R"({"class_name": "Huber", "config": {"name": "huber_loss", "reduction": "sum_over_batch_size"}})"));
  EXPECT_EQ(huber->name(), "huber_loss");
  // Tower writes Keras' keys: the default configs equal Keras' (apart from key order).
  const Config keras_scce = Config::parse_json(
      R"({"name": "sparse_categorical_crossentropy", "reduction": "sum_over_batch_size", "from_logits": false,
          "ignore_class": null})");
  const Config ours = losses::SparseCategoricalCrossentropy()->get_config().at("config");
  EXPECT_EQ(ours.size(), keras_scce.size());
  for (const auto& [key, value] : keras_scce.as_map()) EXPECT_EQ(ours.at(key), value) << key;
}

TEST(LossApi, UnsupportedKerasArgumentsAreConfigErrors) {
  expect_config_error(
      [] {
        losses::loss_from_config(
            Config::parse_json(R"({"class_name": "MeanSquaredError", "config": {"reduction": "sum"}})"));
      },
      {"MeanSquaredError", "'reduction'", "\"sum\"", "sum_over_batch_size"});
  expect_config_error(
      [] {
        losses::loss_from_config(
            Config::parse_json(R"({"class_name": "SparseCategoricalCrossentropy", "config": {"ignore_class": 2.5}})"));
      },
      {"ignore_class"});
  expect_config_error(
      [] {
        losses::loss_from_config(Config::parse_json(
            R"({"class_name": "CategoricalFocalCrossentropy", "config": {"alpha": [0.25, 0.5, 0.25]}})"));
      },
      {"alpha"});
  expect_config_error(
      [] {
        losses::loss_from_config(Config::parse_json(R"({"class_name": "BinaryCrossentropy", "config": {"axis": 1}})"));
      },
      {"'axis'"});
  expect_config_error(
      [] {
        losses::loss_from_config(
            Config::parse_json(R"({"class_name": "CategoricalCrossentropy", "config": {"from_logit": true}})"));
      },
      {"CategoricalCrossentropy", "unknown argument 'from_logit'", "did you mean 'from_logits'"});
  expect_config_error(
      [] {
        losses::loss_from_config(
            Config::parse_json(R"({"class_name": "BinaryCrossentropy", "config": {"from_logits": "yes"}})"));
      },
      {"from_logits"});
}

TEST(LossApi, PerExampleShapeDropsTheLastAxis) {
  EXPECT_EQ(losses::SparseCategoricalCrossentropy()->per_example_shape({2, 3, 4}), (Shape{2, 3}));
  EXPECT_EQ(losses::MeanSquaredError()->per_example_shape({5, 2}), (Shape{5}));
  // A rank-1 y_pred is one value per example.
  EXPECT_EQ(losses::BinaryCrossentropy()->per_example_shape({5}), (Shape{5}));
  EXPECT_THROW(losses::CategoricalCrossentropy()->per_example_shape({5}), std::invalid_argument);
  EXPECT_THROW(losses::MeanSquaredError()->per_example_shape(Shape{}), std::invalid_argument);
}

TEST(LossApi, ShapeMismatchesNameBothShapes) {
  expect_invalid_argument([] { losses::SparseCategoricalCrossentropy()->check_shapes({4, 2}, {4, 3}); },
                          {"sparse_categorical_crossentropy", "(4, 2)", "(4, 3)", "(4,)"});
  expect_invalid_argument([] { losses::CategoricalCrossentropy()->check_shapes({4}, {4, 3}); }, {"(4,)", "(4, 3)"});
  expect_invalid_argument([] { losses::MeanSquaredError({.name = "mse_head"})->check_shapes({4, 2}, {4, 3}); },
                          {"mse_head", "(4, 2)", "(4, 3)"});
  // Keras' squeeze-or-expand: a trailing axis of 1 on either side, and unknown batch dimensions.
  EXPECT_NO_THROW(losses::MeanSquaredError()->check_shapes({4}, {4, 1}));
  EXPECT_NO_THROW(losses::MeanSquaredError()->check_shapes({4, 1}, {4}));
  EXPECT_NO_THROW(losses::SparseCategoricalCrossentropy()->check_shapes({4, 1}, {4, 3}));
  EXPECT_NO_THROW(losses::SparseCategoricalCrossentropy()->check_shapes({-1}, {-1, 3}));
  EXPECT_NO_THROW(losses::CategoricalCrossentropy()->check_shapes({-1, 3}, {-1, 3}));
}

TEST(LossApi, WrongOutputSizesThrow) {
  const Tensor y_pred = testing::random_tensor({4, 3}, 1, 0.1f, 1.f);
  Tensor small({3});
  expect_invalid_argument(
      [&] { losses::SparseCategoricalCrossentropy()->forward(int_labels({0, 1, 2, 0}), y_pred, small); },
      {"per_example", "4 elements"});
  Tensor grad({4, 2});
  expect_invalid_argument(
      [&] { losses::MeanSquaredError()->backward(y_pred, y_pred, Tensor::full({4}, 1.f), grad); }, {"grad", "12"});
  Tensor ok({4, 3});
  expect_invalid_argument(
      [&] { losses::MeanSquaredError()->backward(y_pred, y_pred, Tensor::full({2}, 1.f), ok); }, {"scale", "4"});
}

TEST(SparseCategoricalCrossentropy, BadLabelsNameValueIndexAndClassCount) {
  losses::SparseCategoricalCrossentropy loss;
  const Tensor y_pred = testing::random_tensor({4, 3}, 1, 0.1f, 1.f);
  Tensor per_example({4}), grad({4, 3});
  const Tensor scale = Tensor::full({4}, 0.25f);
  expect_invalid_argument([&] { loss->forward(int_labels({0, 1, 3, 2}), y_pred, per_example); },
                          {"label 3", "index 2", "3 classes"});
  expect_invalid_argument([&] { loss->forward(int_labels({0, -1, 1, 2}), y_pred, per_example); },
                          {"label -1", "index 1", "3 classes"});
  expect_invalid_argument(
      [&] { loss->forward(Tensor::from_vector(std::vector<float>{0, 1, 2, 1.5f}, {4}), y_pred, per_example); },
      {"label 1.5", "index 3", "3 classes"});
  expect_invalid_argument([&] { loss->backward(int_labels({7, 1, 1, 2}), y_pred, scale, grad); },
                          {"label 7", "index 0"});
  expect_invalid_argument([&] { loss->backward_through_softmax(int_labels({0, 1, 1, 5}), y_pred, scale, grad); },
                          {"label 5", "index 3"});
  losses::SparseCategoricalCrossentropy logits({.from_logits = true});
  expect_invalid_argument([&] { logits->forward(int_labels({0, 1, 1, 3}), y_pred, per_example); }, {"label 3"});
}

// With ignore_class, a label equal to it is valid whatever its range; any other label still has to be a class index.
TEST(SparseCategoricalCrossentropy, IgnoreClassAllowsItsLabelOnly) {
  losses::SparseCategoricalCrossentropy loss({.ignore_class = 255, .name = "segmentation"});
  const Tensor y_pred = testing::random_tensor({4, 3}, 1, 0.1f, 1.f);
  Tensor per_example({4}), grad({4, 3});
  const Tensor scale = Tensor::full({4}, 0.25f);
  EXPECT_NO_THROW(loss->forward(int_labels({0, 255, 2, 255}), y_pred, per_example));
  expect_invalid_argument([&] { loss->forward(int_labels({0, 255, 3, 1}), y_pred, per_example); },
                          {"segmentation", "label 3", "index 2", "3 classes", "ignore_class 255"});
  expect_invalid_argument([&] { loss->backward(int_labels({-1, 255, 1, 1}), y_pred, scale, grad); },
                          {"label -1", "index 0", "ignore_class 255"});
  expect_invalid_argument([&] { loss->backward_through_softmax(int_labels({0, 1, 1, 254}), y_pred, scale, grad); },
                          {"label 254", "index 3"});
  expect_invalid_argument([&] { loss->check_host_targets(int_labels({0, 9, 1, 1}), y_pred.shape()); },
                          {"label 9", "index 1"});
}

// An ignored row contributes 0, and the kept rows carry Keras' mask weight rows / kept, so that the mean over all rows
// is Keras' mean over the kept ones; with every row ignored, everything is 0.
TEST(SparseCategoricalCrossentropy, IgnoredRowsAreLeftOutOfTheMean) {
  const Tensor y_pred = Tensor::from_vector(std::vector<float>{0.5f, 0.25f, 0.25f, 0.1f, 0.1f, 0.8f, 0.2f, 0.6f, 0.2f},
                                            {3, 3});
  losses::SparseCategoricalCrossentropy loss({.ignore_class = -1});
  Tensor per_example({3});
  loss->forward(int_labels({0, -1, 1}), y_pred, per_example);
  testing::expect_near(per_example, {-1.5f * std::log(0.5f), 0.f, -1.5f * std::log(0.6f)});
  loss->forward(int_labels({-1, -1, -1}), y_pred, per_example);
  testing::expect_near(per_example, {0.f, 0.f, 0.f});
  Tensor grad({3, 3});
  loss->backward(int_labels({-1, -1, -1}), y_pred, Tensor::full({3}, 1.f), grad);
  testing::expect_near(grad, std::vector<float>(9, 0.f));
}

TEST(SparseCategoricalCrossentropy, AcceptsInt32Int64AndFloatLabels) {
  const Tensor y_pred = Tensor::from_vector(std::vector<float>{0.5f, 0.25f, 0.25f, 0.1f, 0.1f, 0.8f}, {2, 3});
  Tensor a({2}), b({2}), c({2});
  losses::SparseCategoricalCrossentropy loss;
  loss->forward(int_labels({0, 2}), y_pred, a);
  loss->forward(Tensor::from_vector(std::vector<float>{0, 2}, {2, 1}), y_pred, b);
  Tensor i64({2}, DType::int64);
  i64.data<std::int64_t>()[0] = 0;
  i64.data<std::int64_t>()[1] = 2;
  loss->forward(i64, y_pred, c);
  testing::expect_near(a, {-std::log(0.5f), -std::log(0.8f)});
  testing::expect_near(b, a);
  testing::expect_near(c, a);
}

TEST(CategoricalCrossentropy, LabelSmoothingAndRenormalisation) {
  // Probabilities [2, 1, 1] renormalise to [0.5, 0.25, 0.25]; smoothing 0.3 makes the one-hot [0.8, 0.1, 0.1].
  const Tensor y_pred = Tensor::from_vector(std::vector<float>{2.f, 1.f, 1.f}, {1, 3});
  const Tensor y_true = Tensor::from_vector(std::vector<float>{1.f, 0.f, 0.f}, {1, 3});
  Tensor l({1});
  losses::CategoricalCrossentropy({.label_smoothing = 0.3})->forward(y_true, y_pred, l);
  testing::expect_near(l, {static_cast<float>(-(0.8 * std::log(0.5) + 0.2 * std::log(0.25)))});
}

TEST(BinaryCrossentropy, ClippedProbabilitiesGiveFiniteLossAndNoGradient) {
  const Tensor y_true = Tensor::from_vector(std::vector<float>{1.f, 0.f}, {1, 2});
  const Tensor y_pred = Tensor::from_vector(std::vector<float>{0.f, 1.f}, {1, 2});
  Tensor l({1}), g({1, 2});
  losses::BinaryCrossentropy bce;
  bce->forward(y_true, y_pred, l);
  // p = 0 clips to 1e-7 and p = 1 to the float32 1 - 1e-7 (= 1 - 1.19e-7): -(log(1e-7) + log(1.19e-7)) / 2.
  const double lo = 1e-7f, hi = 1.0f - 1e-7f;
  testing::expect_near(l, {static_cast<float>(-(std::log(lo) + std::log(1.0 - hi)) / 2)});
  bce->backward(y_true, y_pred, Tensor::full({1}, 1.f), g);
  testing::expect_near(g, {0.f, 0.f}, 0.f, 0.f);
}

TEST(Huber, QuadraticInsideLinearOutsideTheBand) {
  const Tensor y_true = Tensor::zeros({1, 2});
  const Tensor y_pred = Tensor::from_vector(std::vector<float>{0.5f, -3.f}, {1, 2});
  Tensor l({1});
  losses::Huber()->forward(y_true, y_pred, l);
  // (0.5 * 0.25 + (3 - 0.5)) / 2
  testing::expect_near(l, {(0.125f + 2.5f) / 2});
}

TEST(KLDivergence, SumsOverTheLastAxis) {
  const Tensor y_true = Tensor::from_vector(std::vector<float>{0.5f, 0.5f}, {1, 2});
  const Tensor y_pred = Tensor::from_vector(std::vector<float>{0.25f, 0.75f}, {1, 2});
  Tensor l({1});
  losses::KLDivergence()->forward(y_true, y_pred, l);
  testing::expect_near(l, {static_cast<float>(0.5 * std::log(2.0) + 0.5 * std::log(0.5 / 0.75))});
}

TEST(MeanAbsoluteError, AcceptsInt32Targets) {
  const Tensor y_true = Tensor::from_vector(std::vector<std::int32_t>{1, 0}, {2, 1});
  const Tensor y_pred = Tensor::from_vector(std::vector<float>{0.25f, 0.5f}, {2, 1});
  Tensor l({2});
  losses::MeanAbsoluteError()->forward(y_true, y_pred, l);
  testing::expect_near(l, {0.75f, 0.5f});
}

TEST(MeanSquaredError, FloatPredictionsAreRequired) {
  Tensor l({2});
  expect_invalid_argument(
      [&] { losses::MeanSquaredError()->forward(int_labels({1, 2}), int_labels({1, 2}), l); }, {"y_pred", "float32"});
}

}  // namespace
}  // namespace tower
