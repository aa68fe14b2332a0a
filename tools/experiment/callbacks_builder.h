#pragma once
// Builds an experiment's `callbacks` list through the callback registry (callback_from_config), each written
// {type: EarlyStopping, monitor: val_loss, patience: 3} with Keras' argument names. Relative paths in a
// callback's file arguments (filepath, filename, backup_dir, path) are taken relative to the run directory.
#include <string>
#include <vector>

#include "api/training/callback.h"
#include "tools/experiment/experiment.h"

namespace tower::experiment {

std::vector<callbacks::CallbackPtr> build_callbacks(const Experiment& experiment, const std::string& run_directory);

}  // namespace tower::experiment
