#pragma once
// EarlyStopping (Keras 3): stops fit() when a monitored quantity has stopped improving.
//
// At each epoch end (from start_from_epoch on) the monitored value is compared with the best so far: it
// improves when it beats the best by more than min_delta (lower in "min" mode, higher in "max"; "auto" takes the
// direction from the monitored loss or metric, see monitor_direction.h). An
// improvement records the best (and, with restore_best_weights, copies the weights) and resets the wait
// counter, unless a baseline is set and not beaten. After `patience` epochs without improvement (and never
// at epoch 0) model()->stop_training is set. At the end of training, with restore_best_weights, the weights
// of the best epoch are put back whenever a best was recorded, as Keras 3 does (also when training ran to
// the end and the best epoch was not the last).
//
// A missing monitor key warns (once) on standard error and skips the epoch. An unknown mode throws
// std::invalid_argument, and so does mode "auto" at the first epoch end for a monitor whose direction is unknown.
#include <optional>
#include <string>
#include <vector>

#include "api/callbacks/monitor_direction.h"
#include "api/training/callback.h"
#include "api/core/tensor.h"

namespace tower::callbacks {

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;
  int patience = 0;
  int verbose = 0;
  std::string mode = "auto";  // "auto", "min" or "max"
  std::optional<double> baseline;
  bool restore_best_weights = false;
  int start_from_epoch = 0;
  // The fields by their Keras (and YAML) names, for callbacks::callback_from_config.
  template <class V> void visit(V&& v) {
    v("monitor", monitor);
    v("min_delta", min_delta);
    v("patience", patience);
    v("verbose", verbose);
    v("mode", mode);
    v("baseline", baseline);
    v("restore_best_weights", restore_best_weights);
    v("start_from_epoch", start_from_epoch);
  }
};

class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  CallbackState state() const override;
  void restore_state(const CallbackState& state) override;

  // 0-based epoch at which training was stopped; 0 when it was not.
  int stopped_epoch() const { return stopped_epoch_; }
  int best_epoch() const { return best_epoch_; }
  std::optional<double> best() const { return best_; }
  int wait() const { return wait_; }

 private:
  bool is_improvement(double value, double reference) const;

  EarlyStoppingOptions options_;
  detail::MonitorDirection direction_;
  bool maximize_ = false;  // direction_'s answer, taken at each epoch end
  int wait_ = 0;
  int stopped_epoch_ = 0;
  int best_epoch_ = 0;
  std::optional<double> best_;
  std::optional<std::vector<Tensor>> best_weights_;
  bool warned_ = false;  // the missing-monitor warning is given once, as Python's warnings are
  bool restored_ = false;  // on_train_begin keeps a restored state
};

namespace detail {
// "a,b,c": the keys of `logs`, for the missing-monitor warnings.
std::string log_keys(const Logs& logs);
}  // namespace detail

}  // namespace tower::callbacks
