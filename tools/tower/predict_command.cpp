#include <cstdio>
#include <iostream>

#include "tools/experiment/data_pipeline.h"
#include "tools/experiment/run_directory.h"
#include "tools/experiment/runner.h"
#include "tools/tower/commands.h"

namespace tower::cli {

namespace {

int run(const CommandLine& line) {
  const std::string weights = line.required("weights"), input = line.required("input");
  const experiment::Experiment e = experiment::Experiment::load(experiment_file(line), line.overrides);
  int top = 3;
  if (const auto t = line.option("top")) {
    try {
      top = std::stoi(*t);
    } catch (const std::exception&) {
      throw UsageError("--top takes a number, got '" + *t + "'");
    }
    if (top < 1) throw UsageError("--top must be >= 1");
  }
  std::vector<std::string> names = experiment::known_class_names(e);
  // An image folder's classes are its sub-folders: the ones the weights were trained on.
  if (names.empty()) names = experiment::recorded_class_names(weights);
  for (const experiment::Prediction& p :
       experiment::predict(e, weights, input, top)) {
    std::cout << p.input;
    for (const auto& [k, score] : p.top) {
      char value[32];
      std::snprintf(value, sizeof value, "%.4f", score);
      const std::size_t i = static_cast<std::size_t>(k);
      std::cout << "\t" << (i < names.size() ? names[i] : std::to_string(k)) << " " << value;
    }
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

const Command predict_command{
    "predict",
    "predict the classes of images with trained weights",
    R"(usage: tower predict FILE --weights W --input PATH [--top K] [--set key.path=value ...]

Builds the experiment's model, loads W (a weights file or a run directory) and prints, for every image of
PATH, its most likely classes with their scores: "<image>\t<class> <score>\t...". PATH is an image (.png,
.jpg, .jpeg, .bmp, .gif), a folder of images (searched recursively) or an IDX images file (e.g.
t10k-images-idx3-ubyte.gz). Images are converted to the data source's channels and size and preprocessed as
for evaluation. Classes are named by the data source; an image folder without class_names takes the names the
run recorded (class_names.json of the run directory W is, or is in).

options:
  --weights W      the weights file or run directory (required)
  --input PATH     what to predict (required)
  --top K          classes to print per image (default 3)
  --set key=value  override a value of FILE (repeatable)
)",
    {"weights", "input", "top"},
    run};

}  // namespace tower::cli
