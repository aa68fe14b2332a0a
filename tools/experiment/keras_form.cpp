#include "tools/experiment/keras_form.h"

#include <algorithm>

namespace tower::experiment {

Config to_keras_form(const Config& value) {
  if (value.is_list()) {
    Config out = Config::list();
    for (const Config& item : value.as_list()) out.push_back(to_keras_form(item));
    return out;
  }
  if (!value.is_map()) return value;
  if (value.contains("type") && value.at("type").is_string() && !value.contains("class_name")) {
    Config config = Config::map();
    for (const auto& [k, v] : value.as_map())
      if (k != "type") config.set(k, to_keras_form(v));
    Config out = Config::map();
    out.set("class_name", value.at("type"));
    out.set("config", config);
    return out;
  }
  Config out = Config::map();
  for (const auto& [k, v] : value.as_map()) out.set(k, to_keras_form(v));
  return out;
}

Config without_keys(const Config& value, const std::vector<std::string>& keys) {
  if (!value.is_map()) return value;
  Config out = Config::map();
  for (const auto& [k, v] : value.as_map())
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) out.set(k, v);
  return out;
}

}  // namespace tower::experiment
