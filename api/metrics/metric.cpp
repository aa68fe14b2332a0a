#include "api/metrics/metric.h"

#include <stdexcept>
#include <typeinfo>

#include "api/metrics/metrics.h"

namespace tower::metrics {

namespace {

using Factory = std::function<MetricPtr(const Config&)>;

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> by_class = {
      {"AUC", &AUCImpl::from_config},
      {"Accuracy", &AccuracyImpl::from_config},
      {"BinaryAccuracy", &BinaryAccuracyImpl::from_config},
      {"CategoricalAccuracy", &CategoricalAccuracyImpl::from_config},
      {"Mean", &MeanImpl::from_config},
      {"MeanAbsoluteError", &MeanAbsoluteErrorImpl::from_config},
      {"MeanSquaredError", &MeanSquaredErrorImpl::from_config},
      {"Precision", &PrecisionImpl::from_config},
      {"Recall", &RecallImpl::from_config},
      {"SparseCategoricalAccuracy", &SparseCategoricalAccuracyImpl::from_config},
      {"SparseTopKCategoricalAccuracy", &SparseTopKCategoricalAccuracyImpl::from_config},
      {"TopKCategoricalAccuracy", &TopKCategoricalAccuracyImpl::from_config},
  };
  return by_class;
}

Config without_name(const Config& config) {
  Config out = Config::map();
  if (config.is_map() && config.contains("config"))
    for (const auto& [key, value] : config.at("config").as_map())
      if (key != "name") out.set(key, value);
  return out;
}

}  // namespace

std::vector<std::string> metric_types() {
  std::vector<std::string> out;
  for (const auto& [k, v] : factories()) out.push_back(k);
  return out;
}

MetricPtr metric_from_config(const Config& c) {
  // Keras' snake_case class names and aliases (keras.metrics.ALL_OBJECTS_DICT).
  static const std::map<std::string, std::string> aliases = {
      {"auc", "AUC"},
      {"accuracy", "Accuracy"},
      {"binary_accuracy", "BinaryAccuracy"},
      {"categorical_accuracy", "CategoricalAccuracy"},
      {"mean", "Mean"},
      {"mean_absolute_error", "MeanAbsoluteError"},
      {"mae", "MeanAbsoluteError"},
      {"MAE", "MeanAbsoluteError"},
      {"mean_squared_error", "MeanSquaredError"},
      {"mse", "MeanSquaredError"},
      {"MSE", "MeanSquaredError"},
      {"precision", "Precision"},
      {"recall", "Recall"},
      {"sparse_categorical_accuracy", "SparseCategoricalAccuracy"},
      {"sparse_top_k_categorical_accuracy", "SparseTopKCategoricalAccuracy"},
      {"top_k_categorical_accuracy", "TopKCategoricalAccuracy"},
  };
  return losses::detail::from_registry(c, factories(), aliases, "metric");
}

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

}  // namespace detail
}  // namespace tower::metrics
