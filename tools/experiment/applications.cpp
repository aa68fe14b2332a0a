#include "tools/experiment/applications.h"

#include <map>
#include <mutex>

#include "api/losses/loss.h"

namespace tower::experiment {

namespace {
std::mutex registry_mutex;
std::map<std::string, Application>& registry() {
  static std::map<std::string, Application> r;
  return r;
}
}  // namespace

void register_application(const std::string& name, Application application) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry()[name] = std::move(application);
}

std::vector<std::string> application_names() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  std::vector<std::string> out;
  for (const auto& [k, v] : registry()) out.push_back(k);
  return out;
}

Model application_from_config(const std::string& name, const Config& options, const Shape& data_shape) {
  Application app;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    auto it = registry().find(name);
    if (it != registry().end()) app = it->second;
  }
  if (!app.build) {
    const std::vector<std::string> known = application_names();
    if (known.empty()) throw ConfigError("unknown application '" + name + "': this build has no applications");
    losses::detail::unknown_name(name, known, "application");
  }
  return app.build(options.is_null() ? Config::map() : options, data_shape);
}

}  // namespace tower::experiment
