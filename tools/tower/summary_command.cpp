#include <iostream>

#include "api/core/random.h"
#include "tools/experiment/data_pipeline.h"
#include "tools/experiment/model_builder.h"
#include "tools/experiment/strategy.h"
#include "tools/tower/commands.h"

namespace tower::cli {

namespace {

int run(const CommandLine& line) {
  const experiment::Experiment e = experiment::Experiment::load(experiment_file(line), line.overrides);
  const experiment::RunStrategy strategy(e);
  set_random_seed(e.seed());
  const Shape shape = experiment::example_shape(e);
  std::optional<Model> model;
  strategy.in_scope([&] { model = experiment::build_model(e, shape); });
  model->summary(std::cout);
  std::cout << "Data: " << e.at("data.source").as_string() << ", examples of shape " << shape.to_string()
            << "; global batch " << e.at("fit.batch_size_per_replica").as_int() * strategy.num_replicas_in_sync()
            << " (" << strategy.num_replicas_in_sync() << " replica" << (strategy.num_replicas_in_sync() > 1 ? "s" : "")
            << ", strategy " << strategy.spec().type << ")\n";
  return 0;
}

}  // namespace

const Command summary_command{
    "summary",
    "print the experiment's model summary",
    R"(usage: tower summary FILE [--set key.path=value ...]

Builds the experiment's model (no data is read; the input shape comes from the data section) and prints
Keras' summary table, then the data's example shape and the global batch.
)",
    {},
    run};

}  // namespace tower::cli
