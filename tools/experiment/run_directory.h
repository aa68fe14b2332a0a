#pragma once
// A run directory: everything one `tower train` run leaves behind.
//
//   config.yaml                   the resolved experiment (overrides and defaults applied); `tower train` on it
//                                 repeats the run
//   summary.txt                   the model's summary table
//   history.csv                   one row per epoch (CSVLogger); a resumed run appends, after cutting off the rows
//                                 of epochs its checkpoint does not hold (lost with a crash), so an epoch stopped
//                                 by Ctrl-C part-way has a row for its part before and one for its part after
//   events.jsonl                  one JSON object per step and per epoch (EventLog), for the training monitor
//   checkpoints/state.weights     the resumable training state (RunCheckpoint): weights, optimizer state,
//                                 epoch and batch, random-generator states; rewritten atomically
//   checkpoints/epoch-NNN.weights the model's weights after epoch NNN (1-based), when output.epoch_weights
//   final.weights                 the model's weights at the end of training
//   class_names.json              the training data's class names in label order (a JSON list of strings)
//   metrics.json                  final metrics: the last epoch's logs and the test split's evaluation
#include <string>
#include <vector>

namespace tower::experiment {

class RunDirectory {
 public:
  // Creates the directory (and its parents, and checkpoints/). Throws std::runtime_error when it exists and is not
  // empty (a run directory is never overwritten: resume it or choose another one) or cannot be created.
  static RunDirectory create(const std::string& path);
  // Creates `base` (and its parents, and checkpoints/), or base-2, base-3, ... when it exists: the first name no
  // other run holds. Each name is claimed with one mkdir, so runs started together (a sweep's quick runs within
  // one second, or two launches racing) never share a directory. Throws std::runtime_error when it cannot create.
  static RunDirectory create_unique(const std::string& base);
  // An existing run directory, for --resume. Throws std::runtime_error naming what is missing.
  static RunDirectory open(const std::string& path);
  // The paths of a run directory, without checking or creating anything (for the workers of a multi-worker
  // run other than the chief, which write nothing).
  static RunDirectory view(const std::string& path) { return RunDirectory(path); }

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const;
  std::string config_path() const { return file("config.yaml"); }
  std::string summary_path() const { return file("summary.txt"); }
  std::string history_path() const { return file("history.csv"); }
  std::string events_path() const { return file("events.jsonl"); }
  std::string state_path() const { return file("checkpoints/state.weights"); }
  // epoch is 0-based; the name is 1-based as Keras' "{epoch}".
  std::string epoch_weights_path(int epoch) const;
  std::string final_weights_path() const { return file("final.weights"); }
  std::string metrics_path() const { return file("metrics.json"); }
  std::string class_names_path() const { return file("class_names.json"); }

  // Removes the temporary files of atomic writes that a killed process left ("<name>.tmp-<pid>" of a process
  // that is gone on this machine): for the one process that writes the directory, before it writes.
  void remove_stale_temporaries() const;
  // Writes a file of the directory atomically.
  void write(const std::string& name, const std::string& content) const;

 private:
  explicit RunDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The weights a command should load for "--weights W": W itself when it is a file; for a run directory its
// final.weights, else its latest checkpoints/epoch-NNN.weights (the highest epoch number). Throws std::runtime_error naming W when there
// is none.
std::string resolve_weights(const std::string& weights);

// The class names recorded by the run that wrote W (a run directory, or a weights file in one or in its
// checkpoints/): its class_names.json; empty when W is in no run directory or the run recorded none. Throws
// std::runtime_error naming the file when it is damaged.
std::vector<std::string> recorded_class_names(const std::string& weights);

}  // namespace tower::experiment
