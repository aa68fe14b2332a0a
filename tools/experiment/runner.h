#pragma once
// What the tower commands do with an experiment: train (into a run directory, interruptible and resumable),
// evaluate, predict.
//
// Training makes things in a fixed order, so that a C++ program making the same calls gets the same weights:
// set_random_seed(seed); the data (whose training shuffle draws one seed); the model (its initialisers draw
// from the global generator) inside the strategy's scope; compile; fit.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/training/callback.h"
#include "api/models/model.h"
#include "tools/experiment/experiment.h"

namespace tower::experiment {

struct TrainOptions {
  // The run directory; empty: output.directory, else runs/<name>-<yyyymmdd-hhmmss> under the current directory
  // (with -2, -3, ... appended when another run holds that name).
  std::string out;
  // Continue this run directory from its checkpoint (see resume_experiment for the experiment to pass).
  std::string resume;
  // Messages, the summary and the progress bar; nullptr: standard output.
  std::ostream* log = nullptr;
  // Ctrl-C stops training cleanly while fit runs (interrupt.h).
  bool handle_sigint = true;
  // Tests: stop as Ctrl-C does after this many batches of this process.
  std::optional<std::int64_t> interrupt_after_batches;
  // Called with the run directory once it holds config.yaml and summary.txt, just before training starts
  // (chief only; events.jsonl appears as training begins); `tower train --monitor` starts the monitor here.
  std::function<void(const std::string& run_directory)> on_run_directory;
};

struct TrainResult {
  std::string run_directory;
  bool chief = true;                     // false on the other workers of a multi_worker run (which write nothing)
  bool interrupted = false;
  Config metrics;                        // what metrics.json holds
  std::shared_ptr<ModelImpl> model;      // the trained model
};

// Trains into a run directory (run_directory.h). With options.resume, restores the directory's checkpoint and
// continues: the rest of an interrupted epoch first, then the remaining epochs, reaching the weights an
// uninterrupted run reaches. An interrupted run saves its checkpoint and returns with interrupted set. Throws
// ExperimentError for problems in the experiment and std::runtime_error for others (files, a run directory
// that exists, a checkpoint that does not fit).
TrainResult train(const Experiment& experiment, const TrainOptions& options = {});

// The experiment to resume `run_directory` with: its config.yaml, or `given` (the command line's file and
// overrides) after checking that it describes the same run. fit.epochs (to train longer), fit.verbose and the
// output section may differ; any other difference throws ExperimentError at the differing value.
Experiment resume_experiment(const std::string& run_directory, const Experiment* given);

// Evaluates weights (a weights file, or a run directory's final or latest weights) on a split: "test" or
// "validation". Returns the logs (loss, metrics).
callbacks::Logs evaluate(const Experiment& experiment, const std::string& weights, const std::string& split = "test",
                         std::ostream* log = nullptr);

struct Prediction {
  std::string input;                            // the file, or "<file>[i]" for an example of an IDX file
  std::vector<std::pair<int, float>> top;       // the most likely classes and their scores, best first
};

// Predicts images with weights: `input` is an image file (PNG, JPEG, BMP, GIF), a folder of them (searched
// recursively, in name order) or an IDX images file. Images are decoded with the source's channel count,
// resized to the source's image size when they differ, scaled as the data section says and preprocessed as
// for evaluation. Keeps the `top` best classes.
std::vector<Prediction> predict(const Experiment& experiment, const std::string& weights, const std::string& input,
                                int top = 3);

}  // namespace tower::experiment
