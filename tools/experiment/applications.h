#pragma once
// The application registry: named model builders for `model: {application: <name>, <options>}`. Each reads its
// options with Keras' argument names (those of keras.applications.<name>) and returns a functional Model. More
// applications are added with register_application from their own .cpp file.
#include <functional>
#include <string>
#include <vector>

#include "api/core/shape.h"
#include "api/io/config.h"
#include "api/models/model.h"

namespace tower::experiment {

struct Application {
  // Builds the model from its options (a map, possibly empty). `data_shape` is one example's shape from the
  // data section, for an input_shape the options leave out. Errors name the option.
  std::function<Model(const Config& options, const Shape& data_shape)> build;
};

void register_application(const std::string& name, Application application);
std::vector<std::string> application_names();
// Throws ConfigError for an unknown name (listing the known ones and the closest) and whatever the builder
// throws for its options.
Model application_from_config(const std::string& name, const Config& options, const Shape& data_shape);

}  // namespace tower::experiment
