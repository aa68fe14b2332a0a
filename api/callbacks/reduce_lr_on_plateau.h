#pragma once
// ReduceLROnPlateau (Keras 3): multiplies the optimizer's learning rate by `factor` (never below min_lr)
// when the monitored quantity has not improved by more than min_delta for `patience` epochs (mode "auto" takes the
// direction from the monitored loss or metric, see monitor_direction.h), then waits
// `cooldown` epochs before counting again. The rate is changed with Optimizer::set_learning_rate, so a
// schedule becomes a constant from then on.
//
// At every epoch end the epoch's logs get "learning_rate", the rate before this epoch's reduction as the
// optimizer's float32 variable holds it (History too, as in Keras).
//
// A missing monitor key warns (once) on standard error and skips the epoch. Throws std::invalid_argument for
// factor >= 1 or an unknown mode, and for mode "auto" at the first epoch end when the monitor's direction is unknown.
#include <optional>
#include <string>

#include "api/callbacks/monitor_direction.h"
#include "api/training/callback.h"

namespace tower::callbacks {

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;
  int patience = 10;
  int verbose = 0;
  std::string mode = "auto";  // "auto", "min" or "max"
  double min_delta = 1e-4;
  int cooldown = 0;
  double min_lr = 0.0;
  // The fields by their Keras (and YAML) names, for callbacks::callback_from_config.
  template <class V> void visit(V&& v) {
    v("monitor", monitor);
    v("factor", factor);
    v("patience", patience);
    v("verbose", verbose);
    v("mode", mode);
    v("min_delta", min_delta);
    v("cooldown", cooldown);
    v("min_lr", min_lr);
  }
};

class ReduceLROnPlateau : public Callback {
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void add_epoch_logs(int epoch, Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  CallbackState state() const override;
  void restore_state(const CallbackState& state) override;

  bool in_cooldown() const { return cooldown_counter_ > 0; }
  int wait() const { return wait_; }
  // The best monitored value so far; none before the first.
  std::optional<double> best() const { return best_; }

 private:
  bool is_improvement(double value);
  void reset();

  ReduceLROnPlateauOptions options_;
  detail::MonitorDirection direction_;
  int cooldown_counter_ = 0;
  int wait_ = 0;
  std::optional<double> best_;
  bool warned_ = false;
  bool restored_ = false;  // on_train_begin keeps a restored state
};

namespace detail {
// Sets logs' "learning_rate" to the optimizer's rate in float32, as Keras' callbacks log it.
void log_learning_rate(const ModelImpl& model, Logs& logs);
}  // namespace detail

}  // namespace tower::callbacks
