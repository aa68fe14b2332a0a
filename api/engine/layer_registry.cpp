#include "api/engine/layer_registry.h"

namespace tower {

Registry<LayerPtr>& layer_registry() {
  static Registry<LayerPtr> registry("layer type", {"name", "inbound_nodes", "build_config"});
  return registry;
}

void register_layer(const std::string& type, LayerFactory factory) { layer_registry().add(type, std::move(factory)); }

std::vector<std::string> registered_layer_types() { return layer_registry().class_names(); }

LayerPtr layer_from_config(const Config& serialized) { return layer_registry().from_config(serialized); }

Config to_value(const LayerPtr& layer) { return layer ? layer->serialize() : Config(); }

void from_value(const Config& c, LayerPtr& layer) { layer = c.is_null() ? nullptr : layer_from_config(c); }

}  // namespace tower
