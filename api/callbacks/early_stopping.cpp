#include "api/callbacks/early_stopping.h"

#include <cmath>
#include <iostream>
#include <stdexcept>

#include "api/models/model.h"

namespace tower::callbacks {

namespace detail {

std::string log_keys(const Logs& logs) {
  std::string keys;
  for (const auto& [k, v] : logs.entries()) keys += (keys.empty() ? "" : ",") + k;
  return keys;
}

}  // namespace detail

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : options_(std::move(options)), direction_("EarlyStopping", options_.monitor, options_.mode) {
  options_.min_delta = std::fabs(options_.min_delta);
}

bool EarlyStopping::is_improvement(double value, double reference) const {
  return maximize_ ? value - options_.min_delta > reference : value + options_.min_delta < reference;
}

void EarlyStopping::on_train_begin(const Logs&) {
  if (restored_) {
    restored_ = false;
    return;
  }
  wait_ = 0;
  stopped_epoch_ = 0;
  best_epoch_ = 0;
  best_.reset();
  best_weights_.reset();
}

CallbackState EarlyStopping::state() const {
  CallbackState s;
  s.values.set("wait", wait_);
  s.values.set("stopped_epoch", stopped_epoch_);
  s.values.set("best_epoch", best_epoch_);
  s.values.set("best", best_ ? Config(*best_) : Config());
  if (best_weights_)
    for (std::size_t i = 0; i < best_weights_->size(); ++i)
      s.tensors.emplace_back("best_weights/" + std::to_string(i), (*best_weights_)[i]);
  return s;
}

void EarlyStopping::restore_state(const CallbackState& s) {
  try {
    wait_ = static_cast<int>(s.values.at("wait").as_int());
    stopped_epoch_ = static_cast<int>(s.values.at("stopped_epoch").as_int());
    best_epoch_ = static_cast<int>(s.values.at("best_epoch").as_int());
    const Config& best = s.values.at("best");
    best_ = best.is_null() ? std::nullopt : std::optional<double>(best.as_double());
  } catch (const ConfigError& e) {
    throw std::runtime_error(std::string("EarlyStopping: not a state it wrote: ") + e.what());
  }
  best_weights_.reset();
  if (!s.tensors.empty()) {
    best_weights_.emplace();
    for (const auto& [name, t] : s.tensors) best_weights_->push_back(t);
  }
  restored_ = true;
}

void EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  maximize_ = direction_.maximize(model());
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
