#pragma once
// BackupAndRestore (Keras 3): backs up the training state so that a fit() interrupted (an exception, a
// killed process) can resume where it was.
//
// At every epoch end (after every callback's on_epoch_end; or every `save_freq` batches) one Tower weights file, "<backup_dir>/latest.weights",
// is written atomically: the model's weights ("model/<path>"), the optimizer's slot variables
// ("optimizer/<path>"), the tensors of other callbacks' states ("callback/<index>/<name>") and, in the file's
// extra config, the last completed epoch (0-based; -1 for a batch save during the first epoch), the optimizer's
// iterations, its learning rate when that is a constant, the training plans' random states (seeds and steps,
// TrainingLoop::plan_rngs), the training dataset's pass counts (Dataset::pass_counts) and the other callbacks'
// states (Callback::state). So an
// epoch-level backup resumes a fit to the weights of an uninterrupted one, Dropout, reshuffling, EarlyStopping
// and ReduceLROnPlateau included, provided the program makes its model, data and callbacks as before (the same
// seeds, the same list) and the fit's epochs are passes of its dataset (no steps_per_epoch).
// Because the write is atomic, a crash during a save, or a full disk, leaves the previous backup intact (a
// failed write throws std::runtime_error naming the file and the system error). Weights or optimizer slots
// holding a NaN or an infinity (a diverged run) are not backed up: a warning on standard error says so and the
// last good backup stays.
//
// Before any callback's on_train_begin (before_train_begin, so EarlyStopping or ReduceLROnPlateau listed before
// it start from their restored state all the same) it removes the temporary file a process killed during a save
// left in backup_dir, and restores a
// backup when one exists: weights, optimizer slots (after building the optimizer for the model's trainable
// weights), iterations, a constant learning rate, the plans' random states, the data's pass counts and the other
// callbacks' states; fit() then resumes at the epoch after the saved one (model()->resume_epoch). A batch-level
// backup restarts its epoch from the first batch with the weights saved mid-epoch, as Keras does. A damaged
// backup, or one that does not match the model, its optimizer or the fit's callbacks, throws std::runtime_error
// naming the file; delete it to start from scratch.
//
// on_train_end (reached only when fit() ends without an exception) deletes the backup file when
// delete_checkpoint, and backup_dir too if that leaves it empty. Throws std::invalid_argument for an empty
// backup_dir or a save_freq that is neither "epoch" nor a positive number of batches.
#include <cstdint>
#include <string>
#include <variant>

#include "api/training/callback.h"

namespace tower::callbacks {

struct BackupAndRestoreOptions {
  std::variant<std::string, std::int64_t> save_freq = "epoch";  // "epoch" or a number of batches
  bool delete_checkpoint = true;
  // The fields by their Keras (and YAML) names, for callbacks::callback_from_config.
  template <class V> void visit(V&& v) {
    v("delete_checkpoint", delete_checkpoint);
  }
};

class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(std::string backup_dir, BackupAndRestoreOptions options = {});

  void before_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_complete(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  // "<backup_dir>/latest.weights".
  const std::string& backup_path() const { return path_; }

 private:
  void save(int completed_epoch, bool stopped = false);
  void restore();

  std::string backup_dir_;
  std::string path_;
  BackupAndRestoreOptions options_;
  std::int64_t batch_freq_ = 0;  // 0: save at epoch ends
  int current_epoch_ = 0;
  std::int64_t batches_since_save_ = 0;
  std::int64_t last_batch_seen_ = 0;
  bool warned_non_finite_ = false;
};

}  // namespace tower::callbacks
