#pragma once
// Builds an experiment's `compile` section (optimizer, loss, metrics, weighted_metrics, loss_weights) through the
// optimizer, loss and metric registries, and compiles the model. Every error is an ExperimentError at the entry
// at fault.
#include "api/models/model.h"
#include "tools/experiment/experiment.h"

namespace tower::experiment {

void compile_model(const Experiment& experiment, Model& model);

}  // namespace tower::experiment
