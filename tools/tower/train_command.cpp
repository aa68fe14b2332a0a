#include <iostream>
#include <optional>

#include "tools/experiment/runner.h"
#include "tools/tower/commands.h"

namespace tower::cli {

namespace {

int run(const CommandLine& line) {
  const std::optional<std::string> resume = line.option("resume");
  if (resume && line.option("out")) throw UsageError("--resume continues its run directory; --out does not apply");
  std::optional<experiment::Experiment> given;
  if (!line.positional.empty() || !resume) given = experiment::Experiment::load(experiment_file(line), line.overrides);
  else if (!line.overrides.empty()) throw UsageError("--set needs the experiment FILE");
  experiment::TrainOptions options;
  options.out = line.option("out").value_or("");
  experiment::TrainResult result;
  if (resume) {
    options.resume = *resume;
    result = experiment::train(experiment::resume_experiment(*resume, given ? &*given : nullptr), options);
  } else {
    result = experiment::train(*given, options);
  }
  if (result.chief) std::cout << (result.interrupted ? "Interrupted run: " : "Run: ") << result.run_directory << "\n";
  return result.interrupted ? kExitInterrupted : 0;
}

}  // namespace

const Command train_command{
    "train",
    "train a model as the experiment file says, into a run directory",
    R"(usage: tower train FILE [--set key.path=value ...] [--out RUN_DIR]
       tower train [FILE [--set ...]] --resume RUN_DIR

Trains the experiment in FILE into a run directory: config.yaml (the resolved experiment), summary.txt,
history.csv, events.jsonl (one JSON object per step and per epoch), checkpoints/ (state.weights, the
resumable state, and epoch-NNN.weights), final.weights and metrics.json.

options:
  --set key.path=value  override a value of FILE (repeatable), e.g. --set fit.epochs=1,
                        --set data.train.take=512, --set compile.optimizer.learning_rate=0.01
  --out RUN_DIR         the run directory (default: output.directory, else runs/<name>-<date>-<time>);
                        it must not exist or be empty
  --resume RUN_DIR      continue an interrupted run from its checkpoint, to the same final weights as an
                        uninterrupted run; FILE and --set may be given to check them against the run's
                        config.yaml (only fit.epochs, fit.verbose and output may differ)

Ctrl-C ends training after the current batch and saves a checkpoint (with fit.steps_per_epoch: after the
current epoch); a second Ctrl-C quits at once. Exit status: 0 done, 130 interrupted, 2 a bad experiment or
command line, 1 another error.
)",
    {"out", "resume"},
    run};

}  // namespace tower::cli
