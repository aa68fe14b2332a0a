#pragma once
// Callbacks, as in Keras: hooks the training loop calls around training, epochs and batches. Logs carry the
// running values in Keras' order ("loss", then metrics, then "val_..."), plus for batches "size" (examples in
// the batch).
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/core/tensor.h"
#include "api/io/config.h"

namespace tower {
class ModelImpl;
}

namespace tower::callbacks {

// Ordered name -> value pairs.
//
// A batch's loss and metric values live on the model's device; the loop hands them over deferred (defer()): they
// are read, once, when a callback first looks at them (get, contains, entries, empty) or copies the Logs. A step
// whose callbacks look only at "size" (or at nothing) reads nothing back from the device, so a GPU is never made
// to wait for the host between steps. A callback that keeps a batch's values copies the Logs (a copy holds the
// values, read at the time of the copy).
class Logs {
 public:
  Logs() = default;
  Logs(const Logs& other);
  Logs& operator=(const Logs& other);
  Logs(Logs&&) noexcept = default;
  Logs& operator=(Logs&&) noexcept = default;

  void set(const std::string& key, double value);
  // Values computed by `values` when first looked at; they come before the entries set here, and an entry set
  // here wins over a deferred one of the same name. Replaces an earlier deferral that was not read yet.
  void defer(std::function<Logs()> values);
  // True while deferred values wait to be read: looking at them now costs a read from the device.
  bool deferred() const { return static_cast<bool>(deferred_); }

  std::optional<double> get(const std::string& key) const;
  bool contains(const std::string& key) const { return get(key).has_value(); }
  const std::vector<std::pair<std::string, double>>& entries() const;
  bool empty() const { return entries().empty(); }

 private:
  void resolve() const;
  mutable std::vector<std::pair<std::string, double>> entries_;
  mutable std::function<Logs()> deferred_;
};

// What the loop tells callbacks before training (Keras' callback.params).
struct Params {
  int epochs = 1;
  std::int64_t steps = -1;  // batches per epoch; -1 when unknown
  int verbose = 1;
};

// What a callback remembers from epoch to epoch that a resumed fit needs to continue as if never stopped
// (EarlyStopping's patience count and best weights, ReduceLROnPlateau's wait and cooldown): values, and tensors
// by name. Empty for callbacks that remember nothing.
struct CallbackState {
  Config values = Config::map();
  std::vector<std::pair<std::string, Tensor>> tensors;
  bool empty() const { return values.as_map().empty() && tensors.empty(); }
};

class Callback {
 public:
  virtual ~Callback() = default;
  // The model being trained (valid from on_train_begin to on_train_end). Through it a callback reads and
  // writes weights, the optimizer's learning rate and stop_training.
  void set_model(ModelImpl* model) { model_ = model; }
  void set_params(const Params& params) { params_ = params; }
  ModelImpl* model() const { return model_; }
  const Params& params() const { return params_; }

  // Before any callback's on_train_begin: for callbacks that restore the training state (BackupAndRestore), so
  // that every callback's on_train_begin finds its restored state (restore_state), whatever the order of the list.
  virtual void before_train_begin(const Logs&) {}
  virtual void on_train_begin(const Logs&) {}
  virtual void on_train_end(const Logs&) {}
  virtual void on_epoch_begin(int /*epoch*/, const Logs&) {}
  virtual void on_epoch_end(int /*epoch*/, const Logs&) {}
  // Called just before on_epoch_end with the epoch's logs, for the entries a callback adds to them: the callbacks
  // after it (History among them) see those, as they see what Keras' callbacks write into the logs in on_epoch_end
  // (LearningRateScheduler and ReduceLROnPlateau add "learning_rate").
  virtual void add_epoch_logs(int /*epoch*/, Logs&) {}
  // After every callback's on_epoch_end: for callbacks that save the training state (BackupAndRestore), so that
  // what they save includes the other callbacks' epoch-end updates (EarlyStopping's patience count, say).
  virtual void on_epoch_complete(int /*epoch*/, const Logs&) {}
  virtual void on_train_batch_begin(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_train_batch_end(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_test_begin(const Logs&) {}
  virtual void on_test_end(const Logs&) {}
  virtual void on_test_batch_begin(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_test_batch_end(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_begin(const Logs&) {}
  virtual void on_predict_end(const Logs&) {}
  virtual void on_predict_batch_begin(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_batch_end(std::int64_t /*batch*/, const Logs&) {}

  // What to save with a resumable training state (`tower train`'s checkpoint), and to give back to this
  // callback before the resumed fit's on_train_begin: that on_train_begin then keeps the restored state instead of
  // starting afresh (once: the next fit's starts afresh). restore_state throws std::runtime_error for a state it
  // did not write.
  virtual CallbackState state() const { return {}; }
  virtual void restore_state(const CallbackState& state) { (void)state; }

 private:
  ModelImpl* model_ = nullptr;
  Params params_;
};

using CallbackPtr = std::shared_ptr<Callback>;

}  // namespace tower::callbacks
