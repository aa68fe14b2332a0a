#include "api/callbacks/monitor_direction.h"

#include <stdexcept>

#include "api/models/model.h"

namespace tower::callbacks::detail {

MonitorDirection::MonitorDirection(std::string who, std::string monitor, std::string mode)
    : who_(std::move(who)), monitor_(std::move(monitor)), mode_(std::move(mode)) {
  if (mode_ != "auto" && mode_ != "min" && mode_ != "max")
    throw std::invalid_argument(who_ + ": mode '" + mode_ + "' is unknown; expected \"auto\", \"min\" or \"max\"");
  if (mode_ != "auto") maximize_ = mode_ == "max";
}

bool MonitorDirection::maximize(const ModelImpl* model) {
  if (maximize_) return *maximize_;
  const std::string name = monitor_.rfind("val_", 0) == 0 ? monitor_.substr(4) : monitor_;
  metrics::Direction direction = name == "loss" ? metrics::Direction::down : metrics::Direction::unknown;
  if (model && model->compiled())
    for (const auto& [key, d] : model->training_loop().log_directions())
      if (key == name) direction = d;
  if (direction == metrics::Direction::unknown)
    throw std::invalid_argument(who_ + " callback received monitor=" + monitor_ +
                                ", but cannot tell whether that metric should be maximized or minimized (it is not "
                                "a loss or a compiled metric with a direction). Pass mode \"max\" to monitor based on "
                                "the highest metric value, or mode \"min\" to use the lowest value.");
  maximize_ = direction == metrics::Direction::up;
  return *maximize_;
}

}  // namespace tower::callbacks::detail
