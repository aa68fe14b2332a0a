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
//   metrics.json                  final metrics: the last epoch's logs and the test split's evaluation
#include <string>

namespace tower::experiment {

class RunDirectory {
 public:
  // Creates the directory (and its parents, and checkpoints/). Throws std::runtime_error when it exists and is not
  // empty (a run directory is never overwritten: resume it or choose another one) or cannot be created.
  static RunDirectory create(const std::string& path);
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
// final.weights, else its latest checkpoints/epoch-NNN.weights. Throws std::runtime_error naming W when there
// is none.
std::string resolve_weights(const std::string& weights);

}  // namespace tower::experiment
