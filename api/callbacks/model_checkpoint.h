#pragma once
// ModelCheckpoint (Keras 3): saves the model's weights (ModelImpl::save_weights, a Tower weights file
// written atomically) at the end of every epoch, or every `save_freq` batches. A write that fails (a full
// disk) throws std::runtime_error naming the file and the system error, and leaves the previous file as it was.
//
// `filepath` may hold Python-style placeholders filled from the epoch (1-based) and the logs:
// "ckpt-{epoch:02d}-{val_loss:.4f}.weights" -> "ckpt-03-0.1234.weights". Specs follow Python's str.format for
// ints (epoch, batch) and floats (the logs), character for character: [[fill]align][sign][#][0][width]
// [grouping][.precision][type], grouping ',' or '_', type one of d e E f F g G n % or none (none with a precision
// is 'g' keeping one decimal: {loss:.3} of 1.0 is "1.0", of 100.0 is "1e+02"; 'n' formats as in the C locale).
// "{{" and "}}" are literal braces; "{batch}" is the 1-based batch for batch-level saves. A placeholder naming no
// log key, and a spec Python refuses (a precision for an int, 'd' for a float, ',' with 'n', another type such as
// 'x'), throw std::invalid_argument naming the filepath. Missing parent directories are created.
//
// With save_best_only a file is written only when the monitored value improves on the best so far (which
// starts at initial_value_threshold when given); a missing monitor key warns once on standard error and
// then saves every time, as Keras does. Mode "auto" takes the direction from the monitored loss or metric
// (monitor_direction.h), at the first epoch end; it throws std::invalid_argument there when that is unknown.
//
// Weights holding a NaN or an infinity (a diverged run) are never saved: a warning on standard error names
// the weight and the last good checkpoint, which is kept (Keras would overwrite it). save_best_only compares
// only the values of saves that happen.
//
// Only weight files are written: save_weights_only must stay true (Keras' default of false, the whole
// model, throws std::invalid_argument; use Model::save for that). An unknown mode or a save_freq that is
// neither "epoch" nor a positive count throws std::invalid_argument.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "api/callbacks/monitor_direction.h"
#include "api/training/callback.h"

namespace tower::callbacks {

struct ModelCheckpointOptions {
  std::string monitor = "val_loss";
  int verbose = 0;
  bool save_best_only = false;
  bool save_weights_only = true;
  std::string mode = "auto";  // "auto", "min" or "max"
  std::variant<std::string, std::int64_t> save_freq = "epoch";  // "epoch" or a number of batches
  std::optional<double> initial_value_threshold;
  // The fields by their Keras (and YAML) names, for callbacks::callback_from_config.
  template <class V> void visit(V&& v) {
    v("monitor", monitor);
    v("verbose", verbose);
    v("save_best_only", save_best_only);
    v("save_weights_only", save_weights_only);
    v("mode", mode);
    v("initial_value_threshold", initial_value_threshold);
  }
};

class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(std::string filepath, ModelCheckpointOptions options = {});

  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;

  // The best monitored value so far (save_best_only), starting at initial_value_threshold.
  std::optional<double> best() const { return best_; }
  // The path the last save wrote, empty before the first.
  const std::string& last_saved_path() const { return last_saved_; }

 private:
  // Saves when the policy says so; `batch` is -1 for an epoch-end save.
  void save(int epoch, std::int64_t batch, const Logs& logs);
  bool should_save(int epoch, const Logs& logs, const std::string& path);
  bool should_save_on_batch(std::int64_t batch);

  std::string filepath_;
  ModelCheckpointOptions options_;
  detail::MonitorDirection direction_;
  std::int64_t batch_freq_ = 0;  // 0: save at epoch ends
  std::optional<double> best_;
  int current_epoch_ = 0;
  std::int64_t batches_since_save_ = 0;
  std::int64_t last_batch_seen_ = 0;
  bool warned_ = false;
  bool warned_non_finite_ = false;
  std::string last_saved_;
};

namespace detail {
// Python's repr() of a float: "0.1", "3.0", "1e-05", "inf", "nan".
std::string python_float_repr(double value);
// Python's str.format(**values) for a pattern whose placeholders name entries of `values` (numbers only).
// `ints` lists the names whose value is an integer (formatted as Python ints). Throws std::invalid_argument
// for an unknown name, a bad spec or unbalanced braces, naming the pattern.
std::string python_format(const std::string& pattern, const Logs& values, const std::vector<std::string>& ints);
}  // namespace detail

}  // namespace tower::callbacks
