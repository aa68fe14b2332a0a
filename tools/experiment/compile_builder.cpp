#include "tools/experiment/compile_builder.h"

#include "api/losses/loss.h"
#include "api/metrics/metric.h"
#include "api/optimizers/optimizer.h"
#include "tools/experiment/keras_form.h"

namespace tower::experiment {

void compile_model(const Experiment& experiment, Model& model) {
  const LocatedConfig compile = experiment.at("compile");
  const optimizers::OptimizerPtr optimizer =
      from_registry(compile["optimizer"], [](const Config& c) { return optimizers::optimizer_from_config(c); });
  std::vector<losses::LossPtr> losses;
  const LocatedConfig loss = compile["loss"];
  const auto make_loss = [](const Config& c) { return losses::loss_from_config(c); };
  if (loss.value().is_list()) {
    for (std::size_t i = 0; i < loss.size(); ++i) losses.push_back(from_registry(loss[i], make_loss));
  } else {
    losses.push_back(from_registry(loss, make_loss));
  }
  const auto metric_list = [&](const char* key) {
    std::vector<metrics::MetricPtr> list;
    const LocatedConfig m = compile[key];
    for (std::size_t i = 0; i < m.size(); ++i)
      list.push_back(from_registry(m[i], [](const Config& c) { return metrics::metric_from_config(c); }));
    return list;
  };
  const std::vector<metrics::MetricPtr> metrics = metric_list("metrics");
  const std::vector<metrics::MetricPtr> weighted_metrics = metric_list("weighted_metrics");
  std::vector<double> loss_weights;
  if (!compile["loss_weights"].is_null()) loss_weights = compile["loss_weights"].as_number_list();
  compile.locate([&] { model.compile(optimizer, losses, {metrics}, loss_weights, {weighted_metrics}); });
}

}  // namespace tower::experiment
