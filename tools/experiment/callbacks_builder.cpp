#include "tools/experiment/callbacks_builder.h"

#include <filesystem>

#include "api/callbacks/callback_registry.h"
#include "tools/experiment/keras_form.h"

namespace tower::experiment {

namespace {

Config in_run_directory(Config keras, const std::string& run_directory) {
  if (!keras.is_map() || !keras.contains("config") || !keras.at("config").is_map()) return keras;
  Config config = keras.at("config");
  for (const char* key : {"filepath", "filename", "backup_dir", "path"}) {
    if (!config.contains(key) || !config.at(key).is_string()) continue;
    const std::filesystem::path p = config.at(key).as_string();
    if (p.is_relative() && !p.empty()) config.set(key, (std::filesystem::path(run_directory) / p).string());
  }
  keras.set("config", config);
  return keras;
}

}  // namespace

std::vector<callbacks::CallbackPtr> build_callbacks(const Experiment& experiment, const std::string& run_directory) {
  std::vector<callbacks::CallbackPtr> out;
  const LocatedConfig list = experiment.at("callbacks");
  for (std::size_t i = 0; i < list.size(); ++i)
    out.push_back(from_registry(list[i], [&](const Config& c) {
      return callbacks::callback_from_config(in_run_directory(c, run_directory));
    }));
  return out;
}

}  // namespace tower::experiment
