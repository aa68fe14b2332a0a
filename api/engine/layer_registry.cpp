#include "api/engine/layer_registry.h"

#include <map>
#include <mutex>

namespace tower {

namespace {
std::mutex registry_mutex;
std::map<std::string, LayerFactory>& registry() {
  static std::map<std::string, LayerFactory> r;
  return r;
}
}  // namespace

void register_layer(const std::string& type, LayerFactory factory) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry()[type] = std::move(factory);
}

std::vector<std::string> registered_layer_types() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  std::vector<std::string> out;
  for (const auto& [k, v] : registry()) out.push_back(k);
  return out;
}

LayerPtr layer_from_config(const Config& serialized) {
  if (!serialized.is_map() || !serialized.contains("class_name"))
    throw ConfigError("a layer is {class_name, config}, got " + serialized.to_json());
  const std::string& type = serialized.at("class_name").as_string();
  LayerFactory factory;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    auto it = registry().find(type);
    if (it != registry().end()) factory = it->second;
  }
  if (!factory) {
    std::vector<std::string> known = registered_layer_types();
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    const std::string near = detail::closest_key(type, known);
    throw ConfigError("unknown layer type '" + type + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                      "; known types: " + list);
  }
  return factory(serialized.contains("config") ? serialized.at("config") : Config::map());
}

}  // namespace tower
