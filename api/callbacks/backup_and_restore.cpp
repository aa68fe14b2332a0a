#include "api/callbacks/backup_and_restore.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>

#include "api/io/weights_file.h"
#include "api/models/model.h"
#include "api/training/training_state.h"

namespace tower::callbacks {

namespace {
const std::string kModelPrefix = "model/";
const std::string kOptimizerPrefix = "optimizer/";
const std::string kCallbackPrefix = "callback/";

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

BackupAndRestore::BackupAndRestore(std::string backup_dir, BackupAndRestoreOptions options)
    : backup_dir_(std::move(backup_dir)), options_(std::move(options)) {
  if (backup_dir_.empty()) throw std::invalid_argument("BackupAndRestore: empty backup_dir");
  path_ = (std::filesystem::path(backup_dir_) / "latest.weights").string();
  if (const auto* freq = std::get_if<std::int64_t>(&options_.save_freq)) {
    if (*freq <= 0)
      throw std::invalid_argument("BackupAndRestore: save_freq must be \"epoch\" or a positive number of batches, "
                                  "got " + std::to_string(*freq));
    batch_freq_ = *freq;
  } else if (std::get<std::string>(options_.save_freq) != "epoch") {
    throw std::invalid_argument("BackupAndRestore: invalid save_freq \"" + std::get<std::string>(options_.save_freq) +
                                "\"; expected \"epoch\" or a number of batches");
  }
}

void BackupAndRestore::before_train_begin(const Logs&) {
  current_epoch_ = 0;
  batches_since_save_ = last_batch_seen_ = 0;
  // A process killed while writing the backup left its temporary file; the backup itself is whole.
  if (model()->is_chief()) io::remove_stale_temporaries(backup_dir_);
  if (std::filesystem::exists(path_)) restore();
}

void BackupAndRestore::on_epoch_begin(int epoch, const Logs&) {
  current_epoch_ = epoch;
  last_batch_seen_ = 0;
}

void BackupAndRestore::on_train_batch_end(std::int64_t batch, const Logs&) {
  if (batch_freq_ == 0) return;
  // A batch index not above the last one seen means a new epoch began.
  batches_since_save_ += batch <= last_batch_seen_ ? batch + 1 : batch - last_batch_seen_;
  last_batch_seen_ = batch;
  if (batches_since_save_ < batch_freq_) return;
  batches_since_save_ = 0;
  save(current_epoch_ - 1);
}

void BackupAndRestore::on_epoch_complete(int epoch, const Logs&) {
  // stop_training here comes from a callback (EarlyStopping): the fit is over once this epoch is.
  if (batch_freq_ == 0) save(epoch, model()->stop_training);
}

void BackupAndRestore::on_train_end(const Logs&) {
  if (!options_.delete_checkpoint || !model()->is_chief()) return;
  std::error_code ec;
  std::filesystem::remove(path_, ec);
  if (std::filesystem::is_empty(backup_dir_, ec)) std::filesystem::remove(backup_dir_, ec);
}

void BackupAndRestore::save(int completed_epoch, bool stopped) {
  ModelImpl& m = *model();
  // Under a multi-worker strategy every worker restores from the backup, and only the chief writes it.
  if (!m.is_chief()) return;
  const optimizers::Optimizer& optimizer = *m.optimizer();
  std::vector<io::NamedTensor> tensors;
  for (const VariablePtr& v : m.weights()) tensors.push_back({kModelPrefix + v->path, v->value});
  for (const VariablePtr& v : optimizer.variables()) tensors.push_back({kOptimizerPrefix + v->path, v->value});
  tower::detail::TrainingLoop& loop = m.training_loop();
  Config state = Config::map();
  state.set("epoch", completed_epoch);
  state.set("stopped", stopped);
  state.set("iterations", optimizer.iterations());
  state.set("plans", tower::detail::plan_rngs_to_config(loop.plan_rngs()));
  if (loop.train_data()) {
    Config passes = Config::list();
    for (std::uint64_t n : loop.train_data()->pass_counts()) passes.push_back(static_cast<std::int64_t>(n));
    state.set("data_passes", passes);
  }
  state.set("callbacks", tower::detail::callback_states(loop.callbacks(), this, kCallbackPrefix, tensors));
  // A schedule restarts from `iterations` by itself; only a constant rate (possibly changed by
  // ReduceLROnPlateau or LearningRateScheduler) needs to be kept.
  const Config opt_config = optimizer.get_config();
  if (opt_config.contains("learning_rate") && opt_config.at("learning_rate").is_number())
    state.set("learning_rate", optimizer.learning_rate());
  if (const std::string bad = io::first_non_finite(tensors); !bad.empty()) {
    if (!warned_non_finite_)
      std::cerr << "Warning: BackupAndRestore: not backing up to " << path_ << ": '" << bad
                << "' is NaN or infinite, the training diverged; the last good backup is kept (no backup is "
                   "written while the weights stay non-finite)\n";
    warned_non_finite_ = true;
    return;
  }
  warned_non_finite_ = false;
  Config extra = Config::map();
  extra.set("backup_and_restore", state);
  std::filesystem::create_directories(backup_dir_);
  io::write_weights_file(path_, tensors, extra);
}

void BackupAndRestore::restore() {
  const std::string who = "BackupAndRestore: cannot restore from the backup '" + path_ + "'";
  const std::string hint = "; delete it to start training from scratch";
  io::WeightsFile file;
  try {
    file = io::read_weights_file(path_);
  } catch (const std::exception& e) {
    throw std::runtime_error(who + ": " + e.what() + hint);
  }
  if (!file.extra.contains("backup_and_restore"))
    throw std::runtime_error(who + ": it holds no training state (not written by BackupAndRestore)" + hint);

  ModelImpl& m = *model();
  optimizers::Optimizer& optimizer = *m.optimizer();
  std::vector<Tensor> weights;
  std::vector<Tensor> slots;
  std::vector<io::NamedTensor> callback_tensors;
  for (const io::NamedTensor& t : file.weights) {
    if (starts_with(t.name, kModelPrefix))
      weights.push_back(t.value);
    else if (starts_with(t.name, kOptimizerPrefix))
      slots.push_back(t.value);
    else if (starts_with(t.name, kCallbackPrefix))
      callback_tensors.push_back(t);
    else
      throw std::runtime_error(who + ": unexpected entry '" + t.name + "'" + hint);
  }
  int epoch = 0;
  bool stopped = false;
  std::int64_t iterations = 0;
  std::optional<double> learning_rate;
  std::vector<tower::detail::TrainingLoop::PlanRng> plans;
  std::optional<std::vector<std::uint64_t>> data_passes;
  Config callback_states = Config::list();
  try {
    const Config& state = file.extra.at("backup_and_restore");
    epoch = static_cast<int>(state.at("epoch").as_int());
    iterations = state.at("iterations").as_int();
    stopped = state.contains("stopped") && state.at("stopped").as_bool();
    if (state.contains("learning_rate")) learning_rate = state.at("learning_rate").as_double();
    if (state.contains("plans")) plans = tower::detail::plan_rngs_from_config(state.at("plans"));
    if (state.contains("data_passes")) {
      data_passes.emplace();
      for (const Config& n : state.at("data_passes").as_list()) data_passes->push_back(static_cast<std::uint64_t>(n.as_int()));
    }
    if (state.contains("callbacks")) callback_states = state.at("callbacks");
  } catch (const ConfigError& e) {
    throw std::runtime_error(who + ": malformed training state: " + e.what() + hint);
  }

  const std::vector<VariablePtr> model_weights = m.weights();
  if (model_weights.empty())
    throw std::runtime_error(who + ": the model '" + m.name() +
                             "' has no weights yet; build it (give it an InputLayer or call build) before fit()");
  optimizer.build(m.trainable_weights());
  const std::vector<VariablePtr>& opt_vars = optimizer.variables();
  if (opt_vars.size() != slots.size())
    throw std::runtime_error(who + ": it holds " + std::to_string(slots.size()) + " optimizer variables, the " +
                             optimizer.type() + " optimizer has " + std::to_string(opt_vars.size()) + hint);
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].shape() != opt_vars[i]->value.shape())
      throw std::runtime_error(who + ": optimizer variable '" + opt_vars[i]->path + "' has shape " +
                               opt_vars[i]->value.shape().to_string() + ", the backup has " +
                               slots[i].shape().to_string() + hint);
  try {
    m.set_weights(weights);
  } catch (const std::exception& e) {
    throw std::runtime_error(who + ": it does not match the model: " + e.what() + hint);
  }
  for (std::size_t i = 0; i < slots.size(); ++i) opt_vars[i]->value.copy_from(slots[i]);
  optimizer.set_iterations(iterations);
  if (learning_rate) optimizer.set_learning_rate(*learning_rate);
  tower::detail::TrainingLoop& loop = m.training_loop();
  try {
    loop.restore_plan_rngs(plans);
    // Epoch-level backups only: a batch-level one restarts its epoch, so its data starts a new pass anyway.
    if (data_passes && loop.train_data() && batch_freq_ == 0) loop.train_data()->set_pass_counts(*data_passes);
  } catch (const std::exception& e) {
    throw std::runtime_error(who + ": " + e.what() + hint);
  }
  tower::detail::restore_callback_states(callback_states, callback_tensors, kCallbackPrefix, loop.callbacks(), who);
  // A fit a callback had ended runs no further epoch; it only finishes (on_train_end).
  m.resume_epoch = stopped ? std::max(epoch + 1, params().epochs) : epoch + 1;
}

}  // namespace tower::callbacks
