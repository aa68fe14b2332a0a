#include <filesystem>
#include <iostream>

#include "api/core/random.h"
#include "tools/experiment/callbacks_builder.h"
#include "tools/experiment/compile_builder.h"
#include "tools/experiment/data_pipeline.h"
#include "tools/experiment/model_builder.h"
#include "tools/experiment/strategy.h"
#include "tools/tower/commands.h"

namespace tower::cli {

namespace {

int run(const CommandLine& line) {
  const std::string file = experiment_file(line);
  const experiment::Experiment e = experiment::Experiment::load(file, line.overrides);
  const experiment::RunStrategy strategy(e);
  experiment::check_data_files(e);
  set_random_seed(e.seed());
  const Shape shape = experiment::example_shape(e);
  std::optional<Model> model;
  strategy.in_scope([&] {
    model = experiment::build_model(e, shape);
    experiment::compile_model(e, *model);
  });
  experiment::build_callbacks(e, (std::filesystem::temp_directory_path() / "tower-check").string());
  std::cout << file << ": OK (model '" << model->name() << "', " << model->count_params() << " parameters; data "
            << e.at("data.source").as_string() << ", examples " << shape.to_string() << ")\n";
  return 0;
}

}  // namespace

const Command check_command{
    "check",
    "validate an experiment file without training",
    R"(usage: tower check FILE [--set key.path=value ...]

Validates FILE without training: every key and type of every section, the data files the splits need, the
model (built and shape-checked), the optimizer, loss, metrics and callbacks, and the strategy. Prints OK, or
the first problem as FILE:LINE:COLUMN: message, and exits with status 2.
)",
    {},
    run};

}  // namespace tower::cli
