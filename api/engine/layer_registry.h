#pragma once
// The layer registry: Keras class name -> factory from a config. Serves from_config, model files and YAML.
#include <functional>
#include <string>
#include <vector>

#include "api/engine/layer.h"
#include "api/engine/layer_options.h"
#include "api/io/config.h"
#include "api/io/registry.h"

namespace tower {

using LayerFactory = std::function<LayerPtr(const Config& config)>;

// Every layer class by its Keras class name (io/registry.h). Layers add themselves with TOWER_REGISTER_LAYER; a
// functional model's layer entries may also carry name, inbound_nodes and build_config.
Registry<LayerPtr>& layer_registry();
void register_layer(const std::string& type, LayerFactory factory);
// From {"class_name": ..., "config": {...}}. An unknown class lists the known ones; bad arguments name the
// layer type and the key.
LayerPtr layer_from_config(const Config& serialized);
// The class names layer_from_config knows.
std::vector<std::string> registered_layer_types();

// A layer-valued option (a wrapper's inner layer: TimeDistributed's `layer`) reads and writes as Keras' serialized
// layer {"class_name", "config"}; options_to_config / options_from_config find these by argument-dependent lookup.
// A null layer writes null; reading null gives null.
Config to_value(const LayerPtr& layer);
void from_value(const Config& c, LayerPtr& layer);

namespace detail {
template <class Impl>
LayerPtr make_from_config(const Config& config, const std::string& type) {
  auto layer = std::make_shared<Impl>(options_from_config<typename Impl::Options>(config, type));
  if (config.contains("trainable")) layer->set_trainable(config.at("trainable").as_bool());
  return layer;
}
}  // namespace detail

}  // namespace tower

#define TOWER_REGISTER_CONCAT_(a, b) a##b
#define TOWER_REGISTER_NAME_(line) TOWER_REGISTER_CONCAT_(tower_layer_registered_, line)
// In a layer's .cpp: TOWER_REGISTER_LAYER(DenseImpl, "Dense");
#define TOWER_REGISTER_LAYER(Impl, TYPE)                                                            \
  static const bool TOWER_REGISTER_NAME_(__LINE__) = (::tower::register_layer(TYPE,                 \
      [](const ::tower::Config& c) { return ::tower::detail::make_from_config<Impl>(c, TYPE); }), \
      true)
