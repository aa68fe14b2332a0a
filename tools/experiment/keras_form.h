#pragma once
// Experiment files write objects the short way, `{type: Conv2D, filters: 32, kernel_size: 3}`; the registries
// read Keras' serialized form, `{class_name: Conv2D, config: {filters: 32, kernel_size: 3}}`. to_keras_form
// converts the first into the second, recursively, so nested objects (an initializer, a regularizer, a
// learning-rate schedule) can be written the short way too. A map that already has "class_name", a name string,
// and every other value are kept (their nested maps converted).
#include <string>
#include <vector>

#include "api/io/config.h"
#include "tools/experiment/located_config.h"

namespace tower::experiment {

Config to_keras_form(const Config& value);
// `value` without the map keys in `keys`.
Config without_keys(const Config& value, const std::vector<std::string>& keys);

// Builds a registry object (optimizer, loss, metric, callback) from the value at `c` (a name or {type: ...,
// <arguments>}) with make(to_keras_form(value)). Errors become ExperimentErrors: an unknown class at its name,
// an argument's error at that argument, anything else at the value.
template <class Make>
auto from_registry(const LocatedConfig& c, Make&& make) -> decltype(make(Config())) {
  const LocatedConfig name = c.value().is_map() ? (c["type"].exists() ? c["type"] : c["class_name"]) : c;
  return c.locate([&] {
    try {
      return make(to_keras_form(c.value()));
    } catch (const ConfigError& e) {
      const std::string message = e.what();
      if (message.rfind("unknown ", 0) == 0 && message.find("argument") == std::string::npos) name.fail(message);
      throw;
    }
  });
}

}  // namespace tower::experiment
