#include <iostream>

#include "tools/experiment/runner.h"
#include "tools/tower/commands.h"

namespace tower::cli {

namespace {

int run(const CommandLine& line) {
  const std::string weights = line.required("weights"), split = line.option("split").value_or("test");
  // A bad command line is told before anything is read or built.
  if (split != "test" && split != "validation")
    throw UsageError("--split takes test or validation, got '" + split + "'");
  const experiment::Experiment e = experiment::Experiment::load(experiment_file(line), line.overrides);
  experiment::evaluate(e, weights, split, &std::cout);
  return 0;
}

}  // namespace

const Command evaluate_command{
    "evaluate",
    "evaluate trained weights on the experiment's test (or validation) split",
    R"(usage: tower evaluate FILE --weights W [--split test|validation] [--set key.path=value ...]

Builds the experiment's model, loads W (a weights file, or a run directory: its final.weights, else its latest
checkpoints/epoch-NNN.weights) and prints the loss and metrics of compile on the split.

options:
  --weights W      the weights file or run directory (required)
  --split NAME     test (default) or validation
  --set key=value  override a value of FILE (repeatable)
)",
    {"weights", "split"},
    run};

}  // namespace tower::cli
