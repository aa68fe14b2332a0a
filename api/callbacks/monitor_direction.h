#pragma once
// MonitorDirection: which way the value a callback monitors improves (EarlyStopping, ModelCheckpoint,
// ReduceLROnPlateau), decided as Keras 3's MonitorCallback decides it. Mode "max" maximizes and "min" minimizes.
// Mode "auto" is resolved on first use, once the model is compiled: the monitor's name without a "val_" prefix is
// looked up among the keys the model's logs give (TrainingLoop::log_directions): the losses ("loss",
// "<output>_loss") are minimized, a metric goes its own way (metrics::Metric::direction: accuracies, precision,
// recall and AUC up, errors down).
#include <optional>
#include <string>

namespace tower {
class ModelImpl;
}

namespace tower::callbacks::detail {

class MonitorDirection {
 public:
  // Throws std::invalid_argument naming `who` for a mode other than "auto", "min" or "max".
  MonitorDirection(std::string who, std::string monitor, std::string mode);
  // True to maximize. For "auto" throws std::invalid_argument naming `who` and the monitor when it cannot tell (a
  // name the model does not log, a metric without a direction, such as Mean), as Keras raises: pass mode "max" or
  // "min" then. `model` may be null (no metrics are known then).
  bool maximize(const ModelImpl* model);

 private:
  std::string who_, monitor_, mode_;
  std::optional<bool> maximize_;
};

}  // namespace tower::callbacks::detail
