#include "api/callbacks/reduce_lr_on_plateau.h"

#include <cmath>

#include <algorithm>
#include <iostream>
#include <limits>
#include <stdexcept>

#include "api/callbacks/early_stopping.h"
#include "api/models/model.h"

namespace tower::callbacks {

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options)
    : options_(std::move(options)), direction_("ReduceLROnPlateau", options_.monitor, options_.mode) {
  if (options_.factor >= 1.0)
    throw std::invalid_argument("ReduceLROnPlateau does not support a factor >= 1.0. Received factor=" +
                                std::to_string(options_.factor));
  reset();
}

void ReduceLROnPlateau::reset() {
  best_.reset();
  cooldown_counter_ = 0;
  wait_ = 0;
}

bool ReduceLROnPlateau::is_improvement(double value) {
  if (!best_) return true;
  return direction_.maximize(model()) ? value > *best_ + options_.min_delta : value < *best_ - options_.min_delta;
}

void ReduceLROnPlateau::on_train_begin(const Logs&) {
  if (!restored_) reset();
  restored_ = false;
}

CallbackState ReduceLROnPlateau::state() const {
  CallbackState s;
  s.values.set("wait", wait_);
  s.values.set("cooldown_counter", cooldown_counter_);
  s.values.set("best", best_ ? Config(*best_) : Config());  // null: nothing seen yet
  return s;
}

void ReduceLROnPlateau::restore_state(const CallbackState& s) {
  try {
    wait_ = static_cast<int>(s.values.at("wait").as_int());
    cooldown_counter_ = static_cast<int>(s.values.at("cooldown_counter").as_int());
    const Config& best = s.values.at("best");
    best_ = best.is_null() ? std::nullopt : std::optional<double>(best.as_double());
  } catch (const ConfigError& e) {
    throw std::runtime_error(std::string("ReduceLROnPlateau: not a state it wrote: ") + e.what());
  }
  restored_ = true;
}

namespace detail {
void log_learning_rate(const ModelImpl& model, Logs& logs) {
  logs.set("learning_rate", static_cast<float>(model.optimizer()->learning_rate()));
}
}  // namespace detail

void ReduceLROnPlateau::add_epoch_logs(int, Logs& logs) { detail::log_learning_rate(*model(), logs); }

void ReduceLROnPlateau::on_epoch_end(int epoch, const Logs& logs) {
  direction_.maximize(model());  // resolved here even when the monitor is missing, as Keras does
  const std::optional<double> current = logs.get(options_.monitor);
  if (!current) {
    if (!warned_)
      std::cerr << "Warning: Learning rate reduction is conditioned on metric `" << options_.monitor
                << "` which is not available. Available metrics are: " << detail::log_keys(logs) << ".\n";
    warned_ = true;
    return;
  }
  if (in_cooldown()) {
    --cooldown_counter_;
    wait_ = 0;
  }
  if (is_improvement(*current)) {
    best_ = *current;
    wait_ = 0;
    return;
  }
  if (in_cooldown()) return;
  if (++wait_ < options_.patience) return;
  optimizers::Optimizer& optimizer = *model()->optimizer();
  const double old_lr = optimizer.learning_rate();
  // Keras compares with min_lr in float32, so a rate already at min_lr (as stored) is left alone.
  if (old_lr > static_cast<float>(options_.min_lr)) {
    const double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
    optimizer.set_learning_rate(new_lr);
    if (options_.verbose > 0)
      std::cout << "\nEpoch " << epoch + 1 << ": ReduceLROnPlateau reducing learning rate to " << new_lr << ".\n";
    cooldown_counter_ = options_.cooldown;
    wait_ = 0;
  }
}

}  // namespace tower::callbacks
