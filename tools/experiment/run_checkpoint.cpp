#include "tools/experiment/run_checkpoint.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "api/io/weights_file.h"
#include "api/training/training_state.h"
#include "tools/experiment/interrupt.h"

namespace tower::experiment {

namespace {

const std::string kModelPrefix = "model/";
const std::string kOptimizerPrefix = "optimizer/";
const std::string kCallbackPrefix = "callback/";
const std::string kStateKey = "tower_run_state";

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

Config to_config(const RunState& s) {
  Config c = Config::map();
  c.set("epoch", s.epoch);
  c.set("epoch_batches", s.epoch_batches);
  c.set("epoch_steps", s.epoch_steps);
  c.set("iterations", s.iterations);
  if (s.learning_rate) c.set("learning_rate", *s.learning_rate);
  c.set("stopped", s.stopped);
  c.set("history_bytes", s.history_bytes);
  c.set("plans", tower::detail::plan_rngs_to_config(s.plans));
  c.set("callbacks", s.callbacks);
  return c;
}

RunState from_config(const Config& c) {
  RunState s;
  s.epoch = static_cast<int>(c.at("epoch").as_int());
  s.epoch_batches = c.at("epoch_batches").as_int();
  s.epoch_steps = c.at("epoch_steps").as_int();
  s.iterations = c.at("iterations").as_int();
  if (c.contains("learning_rate")) s.learning_rate = c.at("learning_rate").as_double();
  s.stopped = c.contains("stopped") && c.at("stopped").as_bool();
  if (c.contains("history_bytes")) s.history_bytes = c.at("history_bytes").as_int();
  s.plans = tower::detail::plan_rngs_from_config(c.at("plans"));
  if (c.contains("callbacks")) s.callbacks = c.at("callbacks");
  return s;
}

}  // namespace

RunCheckpoint::RunCheckpoint(RunDirectory dir, RunCheckpointOptions options)
    : dir_(std::move(dir)), options_(options) {}

void RunCheckpoint::restored(const RunState& state) { last_ = state; }

void RunCheckpoint::on_epoch_begin(int epoch, const callbacks::Logs&) {
  epoch_ = epoch;
  epoch_batches_ = first_batch_;
  first_batch_ = 0;
}

void RunCheckpoint::on_train_batch_end(std::int64_t, const callbacks::Logs& logs) {
  ++epoch_batches_;
  ++batches_;
  if (options_.interrupt_after_batches && batches_ >= *options_.interrupt_after_batches) request_interrupt();
  if (interrupted_ || !interrupt_requested()) return;
  const bool partial = epoch_batches_ < options_.epoch_steps;
  if (partial && !options_.partial_epochs) return;  // stops at the epoch's end
  interrupted_ = true;
  // A partial epoch is saved now, before other callbacks' epoch-end hooks act on it; a complete one at its end,
  // where stop_training is set (so that a stop_training seen there comes from another callback).
  if (partial) {
    model()->stop_training = true;
    save();
    saved_partial_ = true;
  }
}

void RunCheckpoint::on_epoch_end(int epoch, const callbacks::Logs&) {
  if (saved_partial_) return;
  // Set by a callback before this one (EarlyStopping): the training is over, not interrupted.
  const bool stopped = model()->stop_training;
  if (interrupted_ || interrupt_requested()) {
    interrupted_ = true;
    model()->stop_training = true;
  }
  save(options_.epoch_weights ? std::optional<int>(epoch) : std::nullopt, stopped);
}

bool RunCheckpoint::save(std::optional<int> epoch_weights, bool stopped) {
  ModelImpl& m = *model();
  const optimizers::Optimizer& optimizer = *m.optimizer();
  RunState s;
  s.epoch = epoch_;
  s.epoch_batches = epoch_batches_;
  s.epoch_steps = options_.epoch_steps;
  s.iterations = optimizer.iterations();
  s.stopped = stopped;
  if (s.epoch_complete()) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(dir_.history_path(), ec);
    if (!ec) s.history_bytes = static_cast<std::int64_t>(size);
  }
  const Config opt_config = optimizer.get_config();
  if (opt_config.contains("learning_rate") && opt_config.at("learning_rate").is_number())
    s.learning_rate = optimizer.learning_rate();
  s.plans = m.training_loop().plan_rngs();
  std::vector<io::NamedTensor> tensors;
  for (const VariablePtr& v : m.weights()) tensors.push_back({kModelPrefix + v->path, v->value});
  for (const VariablePtr& v : optimizer.variables()) tensors.push_back({kOptimizerPrefix + v->path, v->value});
  s.callbacks = tower::detail::callback_states(watched_, this, kCallbackPrefix, tensors);
  last_ = s;
  if (const std::string bad = io::first_non_finite(tensors); !bad.empty()) {
    if (!warned_non_finite_)
      std::cerr << "Warning: not saving the checkpoint " << dir_.state_path() << " (epoch " << s.epoch + 1
                << ", step " << s.iterations << "): '" << bad
                << "' is NaN or infinite, the training diverged; the last good checkpoint is kept (--resume "
                   "continues from it; no checkpoint is written while the weights stay non-finite)\n";
    warned_non_finite_ = true;
    return false;
  }
  warned_non_finite_ = false;
  // The epoch's weights file first, the state last: the state is the commit, so a run killed between the two
  // resumes before this epoch's end and writes the file again, and none is ever missing.
  if (epoch_weights) m.save_weights(dir_.epoch_weights_path(*epoch_weights));
  Config extra = Config::map();
  extra.set(kStateKey, to_config(s));
  io::write_weights_file(dir_.state_path(), tensors, extra);
  return true;
}

namespace {
// The training state of a state file already read.
RunState state_of(const io::WeightsFile& file, const std::string& path) {
  if (!file.extra.contains(kStateKey))
    throw std::runtime_error(path + " holds no training state (it is not a run directory's state.weights)");
  try {
    return from_config(file.extra.at(kStateKey));
  } catch (const ConfigError& e) {
    throw std::runtime_error(path + ": malformed training state: " + e.what());
  }
}
}  // namespace

RunState read_run_state(const std::string& path) { return state_of(io::read_weights_file(path), path); }

RunState restore_run_state(const std::string& path, ModelImpl& model,
                           const std::vector<callbacks::CallbackPtr>& callbacks) {
  const io::WeightsFile file = io::read_weights_file(path);
  RunState state = state_of(file, path);
  std::vector<Tensor> weights, slots;
  std::vector<io::NamedTensor> callback_tensors;
  for (const io::NamedTensor& t : file.weights) {
    if (starts_with(t.name, kModelPrefix))
      weights.push_back(t.value);
    else if (starts_with(t.name, kOptimizerPrefix))
      slots.push_back(t.value);
    else if (starts_with(t.name, kCallbackPrefix))
      callback_tensors.push_back(t);
    else
      throw std::runtime_error(path + ": unexpected entry '" + t.name + "'");
  }
  optimizers::Optimizer& optimizer = *model.optimizer();
  optimizer.build(model.trainable_weights());
  const std::vector<VariablePtr>& opt_vars = optimizer.variables();
  if (opt_vars.size() != slots.size())
    throw std::runtime_error(path + " holds " + std::to_string(slots.size()) + " optimizer variables; the " +
                             optimizer.type() + " optimizer of this experiment has " + std::to_string(opt_vars.size()));
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].shape() != opt_vars[i]->value.shape())
      throw std::runtime_error(path + ": optimizer variable '" + opt_vars[i]->path + "' has shape " +
                               opt_vars[i]->value.shape().to_string() + ", the checkpoint has " +
                               slots[i].shape().to_string());
  try {
    model.set_weights(weights);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + " does not match the model: " + e.what());
  }
  for (std::size_t i = 0; i < slots.size(); ++i) opt_vars[i]->value.copy_from(slots[i]);
  optimizer.set_iterations(state.iterations);
  if (state.learning_rate) optimizer.set_learning_rate(*state.learning_rate);
  tower::detail::restore_callback_states(state.callbacks, callback_tensors, kCallbackPrefix, callbacks, path);
  try {
    model.training_loop().restore_plan_rngs(state.plans);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  return state;
}

}  // namespace tower::experiment
