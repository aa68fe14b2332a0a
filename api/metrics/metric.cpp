#include "api/metrics/metric.h"

#include <map>
#include <stdexcept>
#include <typeinfo>

#include "api/metrics/metrics.h"

namespace tower::metrics {

namespace {

Config without_name(const Config& config) {
  Config out = Config::map();
  if (config.is_map() && config.contains("config"))
    for (const auto& [key, value] : config.at("config").as_map())
      if (key != "name") out.set(key, value);
  return out;
}

}  // namespace

Registry<MetricPtr>& registry() {
  // Keras' class names, with its snake_case names and aliases (keras.metrics.ALL_OBJECTS_DICT).
  static Registry<MetricPtr> r("metric");
  static const bool populated = [] {
    r.add("AUC", &AUCImpl::from_config, {"auc"});
    r.add("Accuracy", &AccuracyImpl::from_config, {"accuracy"});
    r.add("BinaryAccuracy", &BinaryAccuracyImpl::from_config, {"binary_accuracy"});
    r.add("BinaryIoU", &BinaryIoUImpl::from_config, {"binary_io_u"});
    r.add("CategoricalAccuracy", &CategoricalAccuracyImpl::from_config, {"categorical_accuracy"});
    r.add("F1Score", &F1ScoreImpl::from_config, {"f1_score"});
    r.add("FBetaScore", &FBetaScoreImpl::from_config, {"f_beta_score"});
    r.add("FalseNegatives", &FalseNegativesImpl::from_config, {"false_negatives"});
    r.add("FalsePositives", &FalsePositivesImpl::from_config, {"false_positives"});
    r.add("IoU", &IoUImpl::from_config, {"io_u"});
    r.add("Mean", &MeanImpl::from_config, {"mean"});
    r.add("MeanIoU", &MeanIoUImpl::from_config, {"mean_io_u"});
    r.add("MeanAbsoluteError", &MeanAbsoluteErrorImpl::from_config, {"mean_absolute_error", "mae", "MAE"});
    r.add("MeanSquaredError", &MeanSquaredErrorImpl::from_config, {"mean_squared_error", "mse", "MSE"});
    r.add("OneHotIoU", &OneHotIoUImpl::from_config, {"one_hot_io_u"});
    r.add("OneHotMeanIoU", &OneHotMeanIoUImpl::from_config, {"one_hot_mean_io_u"});
    r.add("Precision", &PrecisionImpl::from_config, {"precision"});
    r.add("PrecisionAtRecall", &PrecisionAtRecallImpl::from_config, {"precision_at_recall"});
    r.add("R2Score", &R2ScoreImpl::from_config, {"r2_score"});
    r.add("Recall", &RecallImpl::from_config, {"recall"});
    r.add("RecallAtPrecision", &RecallAtPrecisionImpl::from_config, {"recall_at_precision"});
    r.add("RootMeanSquaredError", &RootMeanSquaredErrorImpl::from_config, {"root_mean_squared_error"});
    r.add("SensitivityAtSpecificity", &SensitivityAtSpecificityImpl::from_config, {"sensitivity_at_specificity"});
    r.add("SparseCategoricalAccuracy", &SparseCategoricalAccuracyImpl::from_config, {"sparse_categorical_accuracy"});
    r.add("SparseTopKCategoricalAccuracy", &SparseTopKCategoricalAccuracyImpl::from_config,
          {"sparse_top_k_categorical_accuracy"});
    r.add("SpecificityAtSensitivity", &SpecificityAtSensitivityImpl::from_config, {"specificity_at_sensitivity"});
    r.add("TopKCategoricalAccuracy", &TopKCategoricalAccuracyImpl::from_config, {"top_k_categorical_accuracy"});
    r.add("TrueNegatives", &TrueNegativesImpl::from_config, {"true_negatives"});
    r.add("TruePositives", &TruePositivesImpl::from_config, {"true_positives"});
    r.add("CategoricalHinge", &CategoricalHingeImpl::from_config, {"categorical_hinge"});
    r.add("CosineSimilarity", &CosineSimilarityImpl::from_config, {"cosine_similarity"});
    r.add("Hinge", &HingeImpl::from_config, {"hinge"});
    r.add("KLDivergence", &KLDivergenceImpl::from_config, {"kl_divergence"});
    r.add("LogCoshError", &LogCoshErrorImpl::from_config, {"log_cosh_error"});
    r.add("MeanAbsolutePercentageError", &MeanAbsolutePercentageErrorImpl::from_config,
          {"mean_absolute_percentage_error", "mape", "MAPE"});
    r.add("MeanSquaredLogarithmicError", &MeanSquaredLogarithmicErrorImpl::from_config,
          {"mean_squared_logarithmic_error", "msle", "MSLE"});
    r.add("Poisson", &PoissonImpl::from_config, {"poisson"});
    r.add("SquaredHinge", &SquaredHingeImpl::from_config, {"squared_hinge"});
    return true;
  }();
  (void)populated;
  return r;
}

Direction Metric::direction() const {
  // Keras 3's Metric._direction of each class Tower has.
  static const std::map<std::string, Direction> directions = {
      {"AUC", Direction::up},
      {"Accuracy", Direction::up},
      {"BinaryAccuracy", Direction::up},
      {"BinaryIoU", Direction::up},
      {"CategoricalAccuracy", Direction::up},
      {"F1Score", Direction::up},
      {"FBetaScore", Direction::up},
      {"FalseNegatives", Direction::unknown},
      {"FalsePositives", Direction::unknown},
      {"IoU", Direction::up},
      {"Mean", Direction::unknown},
      {"MeanIoU", Direction::up},
      {"MeanAbsoluteError", Direction::down},
      {"MeanSquaredError", Direction::down},
      {"OneHotIoU", Direction::up},
      {"OneHotMeanIoU", Direction::up},
      {"Precision", Direction::up},
      {"PrecisionAtRecall", Direction::up},
      {"R2Score", Direction::up},
      {"Recall", Direction::up},
      {"RecallAtPrecision", Direction::up},
      {"RootMeanSquaredError", Direction::down},
      {"SensitivityAtSpecificity", Direction::up},
      {"SparseCategoricalAccuracy", Direction::up},
      {"SparseTopKCategoricalAccuracy", Direction::up},
      {"SpecificityAtSensitivity", Direction::up},
      {"TopKCategoricalAccuracy", Direction::up},
      {"TrueNegatives", Direction::unknown},
      {"TruePositives", Direction::unknown},
      {"CategoricalHinge", Direction::down},
      {"CosineSimilarity", Direction::up},
      {"Hinge", Direction::down},
      {"KLDivergence", Direction::down},
      {"LogCoshError", Direction::down},
      {"MeanAbsolutePercentageError", Direction::down},
      {"MeanSquaredLogarithmicError", Direction::down},
      {"Poisson", Direction::down},
      {"SquaredHinge", Direction::down},
  };
  const auto it = directions.find(type());
  return it == directions.end() ? Direction::unknown : it->second;
}

std::vector<std::string> metric_types() { return registry().class_names(); }

MetricPtr metric_from_config(const Config& c) { return registry().from_config(c); }

namespace detail {

void check_mergeable(const Metric& self, const Metric& other) {
  if (typeid(self) != typeid(other))
    throw std::invalid_argument(self.name() + ": cannot merge the state of " + other.type() + " '" + other.name() +
                                "' into a " + self.type());
  if (!(without_name(self.get_config()) == without_name(other.get_config())))
    throw std::invalid_argument(self.name() + ": cannot merge the state of '" + other.name() +
                                "', configured differently: " + other.get_config().to_json() + " vs " +
                                self.get_config().to_json());
}

losses::detail::DeviceDoubles& state_on(losses::detail::DeviceDoubles& state, Index n, Device device) {
  if (!state.defined()) state = losses::detail::DeviceDoubles(n, device);
  if (state.device() != device) state = state.to(device);
  return state;
}

void merge_states(losses::detail::DeviceDoubles& into, const losses::detail::DeviceDoubles& from) {
  if (!from.defined()) return;
  state_on(into, from.size(), from.device());
  const losses::detail::DeviceDoubles there = from.to(into.device());
  backend::get(into.device()).add_doubles(there.data(), into.data(), into.size());
}

bool weight_per_element(const std::string& who, const Tensor& sample_weight, Index examples, Index numel) {
  if (sample_weight.numel() != examples && sample_weight.numel() != numel)
    throw std::invalid_argument(who + ": sample_weight of shape " + sample_weight.shape().to_string() +
                                " does not fit " + std::to_string(examples) + " examples (expected one weight per " +
                                "example)");
  return sample_weight.numel() != examples;
}

}  // namespace detail
}  // namespace tower::metrics
