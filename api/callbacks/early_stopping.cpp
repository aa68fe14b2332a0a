#include "api/callbacks/early_stopping.h"

#include <cmath>
#include <iostream>
#include <stdexcept>

#include "api/models/model.h"

namespace tower::callbacks {

namespace detail {

bool monitor_maximizes(const std::string& who, const std::string& monitor, const std::string& mode) {
  if (mode == "max") return true;
  if (mode == "min") return false;
  if (mode != "auto")
    throw std::invalid_argument(who + ": mode '" + mode + "' is unknown; expected \"auto\", \"min\" or \"max\"");
  return monitor.find("acc") != std::string::npos || monitor.find("auc") != std::string::npos;
}

std::string log_keys(const Logs& logs) {
  std::string keys;
  for (const auto& [k, v] : logs.entries()) keys += (keys.empty() ? "" : ",") + k;
  return keys;
}

}  // namespace detail

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  maximize_ = detail::monitor_maximizes("EarlyStopping", options_.monitor, options_.mode);
  options_.min_delta = std::fabs(options_.min_delta);
}

bool EarlyStopping::is_improvement(double value, double reference) const {
  return maximize_ ? value - options_.min_delta > reference : value + options_.min_delta < reference;
}

void EarlyStopping::on_train_begin(const Logs&) {
  wait_ = 0;
  stopped_epoch_ = 0;
  best_epoch_ = 0;
  best_.reset();
  best_weights_.reset();
}

void EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  const std::optional<double> current = logs.get(options_.monitor);
  if (!current) {
    if (warned_) return;
    warned_ = true;
    std::cerr << "Warning: Early stopping conditioned on metric `" << options_.monitor
              << "` which is not available. Available metrics are: " << detail::log_keys(logs) << "\n";
    return;
  }
  if (epoch < options_.start_from_epoch) return;
  if (options_.restore_best_weights && !best_weights_) {
    best_weights_ = model()->get_weights();
    best_epoch_ = epoch;
  }
  ++wait_;
  if (!best_ || is_improvement(*current, *best_)) {
    best_ = *current;
    best_epoch_ = epoch;
    if (options_.restore_best_weights) best_weights_ = model()->get_weights();
    // The wait restarts only when both the previous best and the baseline are beaten.
    if (!options_.baseline || is_improvement(*current, *options_.baseline)) wait_ = 0;
    return;
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    model()->stop_training = true;
  }
}

void EarlyStopping::on_train_end(const Logs&) {
  if (stopped_epoch_ > 0 && options_.verbose > 0) std::cout << "Epoch " << stopped_epoch_ + 1 << ": early stopping\n";
  if (options_.restore_best_weights && best_weights_) {
    if (options_.verbose > 0)
      std::cout << "Restoring model weights from the end of the best epoch: " << best_epoch_ + 1 << ".\n";
    model()->set_weights(*best_weights_);
  }
}

}  // namespace tower::callbacks
