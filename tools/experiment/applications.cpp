#include "tools/experiment/applications.h"

#include "api/io/registry.h"

namespace tower::experiment {

namespace {
// An application with its options read: builds the model for one example shape of the data.
using Builder = std::function<Model(const Shape& data_shape)>;

Registry<Builder>& registry() {
  static Registry<Builder> r("application");
  return r;
}
}  // namespace

void register_application(const std::string& name, Application application) {
  registry().add(name, [build = std::move(application.build)](const Config& options) -> Builder {
    return [build, options](const Shape& data_shape) { return build(options, data_shape); };
  });
}

std::vector<std::string> application_names() { return registry().class_names(); }

Model application_from_config(const std::string& name, const Config& options, const Shape& data_shape) {
  if (application_names().empty())
    throw ConfigError("unknown application '" + name + "': this build has no applications");
  Config serialized = Config::map();
  serialized.set("class_name", name);
  serialized.set("config", options.is_null() ? Config::map() : options);
  return registry().from_config(serialized)(data_shape);
}

}  // namespace tower::experiment
