#pragma once
// RunCheckpoint: the resumable training state of a run directory (checkpoints/state.weights), and Ctrl-C.
//
// The state is one Tower weights file, rewritten atomically: the model's weights ("model/<path>"), the
// optimizer's slots ("optimizer/<path>") and, in its extra config under "tower_run_state": the epoch (0-based) and
// how many of its batches are done, the batches an epoch has, the optimizer's iterations, a constant learning
// rate (one a schedule does not give), and the state of the random generator of every training plan (Dropout
// masks; under a strategy, every replica's plan). The optimizer's iterations count the training batches
// consumed, so they also give the data position (TrainData::seek). Together these let a resumed run reach the
// same weights as an uninterrupted one. The states of the run's callbacks that remember something between
// epochs (EarlyStopping's patience count and best weights, ReduceLROnPlateau's wait and cooldown) are saved in
// the same file (values in the extra config, tensors as "callback/<index>/<name>"), so the file is the run's one
// resumable state.
//
// The callback saves the state at the end of every epoch, after the other callbacks (put it last), and, before
// it, the model's weights as checkpoints/epoch-NNN.weights when epoch_weights (the state is written last, so
// every epoch the state counts as done has its weights file). Weights or slots holding a NaN or an
// infinity (a diverged run) are not saved: a warning on standard error says so and the last good checkpoint
// stays. A failed write (a full disk) throws std::runtime_error naming the file and the system error, and
// leaves the previous checkpoint intact. At the end of each batch it reads the
// interrupt flag (interrupt.h); when set it sets stop_training, so fit() ends after the batch, and saves the
// state: at once when the epoch is partial (before any epoch-end hook acts on the partial epoch), else at the
// epoch's end as usual.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/training/callback.h"
#include "api/io/config.h"
#include "api/models/model.h"
#include "tools/experiment/run_directory.h"

namespace tower::experiment {

struct RunState {
  int epoch = 0;                   // the last epoch trained (0-based)
  std::int64_t epoch_batches = 0;  // batches of it done
  std::int64_t epoch_steps = 0;    // batches an epoch has
  std::int64_t iterations = 0;
  std::optional<double> learning_rate;
  // A callback (EarlyStopping, TerminateOnNaN) ended the training: a resumed run trains no further epoch, it
  // only finishes (on_train_end: EarlyStopping's best weights, the final files).
  bool stopped = false;
  // history.csv's size when an epoch-end state was saved (-1: a mid-epoch state, or none): a resumed run cuts the
  // file back to it, so the rows of epochs trained after this state and lost with a crash are not there twice.
  std::int64_t history_bytes = -1;
  // The random states (seeds and steps) of the training plans (TrainingLoop::plan_rngs).
  std::vector<tower::detail::TrainingLoop::PlanRng> plans;
  // The values of the states of the run's callbacks that remember something (EarlyStopping, ReduceLROnPlateau),
  // by their position in the list given to RunCheckpoint::watch (training_state.h); their tensors are in the file.
  Config callbacks = Config::list();

  bool epoch_complete() const { return epoch_batches >= epoch_steps; }
};

struct RunCheckpointOptions {
  std::int64_t epoch_steps = 0;  // batches per epoch
  bool epoch_weights = true;
  // Whether an interrupt may stop an epoch part-way. Without (fit.steps_per_epoch: epochs that do not follow the
  // data's passes), an interrupt ends training at the end of the epoch.
  bool partial_epochs = true;
  // Tests: raise the interrupt after this many batches of this process.
  std::optional<std::int64_t> interrupt_after_batches;
};

class RunCheckpoint : public callbacks::Callback {
 public:
  RunCheckpoint(RunDirectory dir, RunCheckpointOptions options);

  // The run's other callbacks: their states are saved with the training state.
  void watch(std::vector<callbacks::CallbackPtr> callbacks) { watched_ = std::move(callbacks); }
  // After restore_run_state: the restored plans count as made, so their states are saved from now on.
  void restored(const RunState& state);
  // The next epoch that begins starts at batch `first_batch` of itself (the rest of an interrupted epoch).
  void start_epoch_at(std::int64_t first_batch) { first_batch_ = first_batch; }

  void on_epoch_begin(int epoch, const callbacks::Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const callbacks::Logs& logs) override;
  void on_epoch_end(int epoch, const callbacks::Logs& logs) override;

  bool interrupted() const { return interrupted_; }
  // The state of the last save (or restore), also when that save was refused for non-finite weights.
  const std::optional<RunState>& last_state() const { return last_; }

 private:
  // Writes the weights of epoch `epoch_weights` (when given), then the state file; neither, and false (with a
  // warning), when the weights or slots hold a NaN or an infinity.
  bool save(std::optional<int> epoch_weights = std::nullopt, bool stopped = false);

  RunDirectory dir_;
  RunCheckpointOptions options_;
  std::int64_t first_batch_ = 0;
  int epoch_ = 0;
  std::int64_t epoch_batches_ = 0;
  std::int64_t batches_ = 0;           // in this process
  bool interrupted_ = false;
  bool saved_partial_ = false;
  bool warned_non_finite_ = false;
  std::optional<RunState> last_;
  std::vector<callbacks::CallbackPtr> watched_;
};

// Reads a state file's training state (without applying it). Throws std::runtime_error naming the file.
RunState read_run_state(const std::string& path);
// Restores a state file into a compiled model: weights, optimizer slots (building the optimizer first),
// iterations, a constant learning rate, the plans' random states (making those plans), and the states of
// `callbacks` (the list the run's RunCheckpoint watched). Throws std::runtime_error naming the file when it does
// not match the model, its optimizer or the callbacks.
RunState restore_run_state(const std::string& path, ModelImpl& model,
                           const std::vector<callbacks::CallbackPtr>& callbacks = {});

}  // namespace tower::experiment
