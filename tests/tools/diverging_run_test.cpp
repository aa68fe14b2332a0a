// A run that diverges (its learning rate jumps from 0.01 to 1e28 after the first epoch): the progress output
// says "loss: nan" and warns once, naming the epoch and batch where the loss first became NaN; the run's
// checkpoint is never replaced by non-finite weights, so it still holds epoch 1 and loads; with TerminateOnNaN
// training stops at that batch.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>

#include "api/io/weights_file.h"
#include "tests/tools/tools_testing.h"
#include "tools/experiment/run_checkpoint.h"
#include "tools/experiment/runner.h"

namespace tower::experiment {
namespace {

namespace fs = std::filesystem;

// 64 examples in batches of 16: 4 steps per epoch; the step-4 staircase makes epoch 2's rate 1e28.
const std::string kExperiment = R"(seed: 3
data:
  source: synthetic
  shape: [4, 4, 1]
  classes: 3
  train_examples: 64
  test_examples: 16
model:
  layers:
    - {type: Flatten}
    - {type: Dense, units: 8, activation: relu}
    - {type: Dense, units: 3, activation: softmax}
compile:
  optimizer:
    type: SGD
    learning_rate: {type: ExponentialDecay, initial_learning_rate: 0.01, decay_steps: 4, decay_rate: 1.0e+30,
                    staircase: true}
  loss: sparse_categorical_crossentropy
fit: {epochs: 3, batch_size_per_replica: 16, verbose: 2}
)";

struct Outcome {
  TrainResult result;
  std::string log;     // the progress output
  std::string out;     // standard output: TerminateOnNaN's message
  std::string errors;  // standard error: warnings
};

Outcome train_diverging(const std::string& out, const std::vector<std::string>& overrides = {}) {
  const Experiment e = Experiment::parse(kExperiment, "diverging.yaml", overrides);
  TrainOptions o;
  o.handle_sigint = false;
  o.out = out;
  std::ostringstream log;
  o.log = &log;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  Outcome r;
  r.result = train(e, o);
  r.errors = ::testing::internal::GetCapturedStderr();
  r.out = ::testing::internal::GetCapturedStdout();
  r.log = log.str();
  return r;
}

std::size_t count(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(DivergingRun, ReportsTheNaNOnceAndKeepsTheLastFiniteCheckpoint) {
  const fs::path root = testing::fresh_dir();
  const Outcome r = train_diverging((root / "run").string());
  EXPECT_NE(r.log.find("loss: nan"), std::string::npos) << r.log;
  EXPECT_EQ(r.log.find("-nan"), std::string::npos) << r.log;
  EXPECT_EQ(count(r.log, "Warning: loss is nan"), 1u) << r.log;
  EXPECT_NE(r.log.find("Warning: loss is nan at epoch 2, batch "), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("Test: loss: nan"), std::string::npos) << r.log;
  // The checkpoint after epoch 1 stays: the epochs after it are refused, with one warning.
  EXPECT_EQ(count(r.errors, "Warning: not saving the checkpoint"), 1u) << r.errors;
  EXPECT_NE(r.errors.find("is NaN or infinite, the training diverged"), std::string::npos) << r.errors;
  const RunDirectory dir = RunDirectory::open((root / "run").string());
  const RunState state = read_run_state(dir.state_path());
  EXPECT_EQ(state.epoch, 0);
  EXPECT_EQ(state.iterations, 4);
  const io::WeightsFile file = io::read_weights_file(dir.state_path());
  EXPECT_EQ(io::first_non_finite(file.weights), "");
  EXPECT_TRUE(fs::exists(dir.epoch_weights_path(0)));
  EXPECT_FALSE(fs::exists(dir.epoch_weights_path(1)));
  // The final weights are what training ended with: not finite.
  EXPECT_NE(io::first_non_finite(io::read_weights_file(dir.final_weights_path()).weights), "");
  fs::remove_all(root);
}

TEST(DivergingRun, TerminateOnNaNStopsAtTheFirstNaNBatch) {
  const fs::path root = testing::fresh_dir();
  const Outcome r = train_diverging((root / "run").string(), {"callbacks=[{type: TerminateOnNaN}]"});
  // "Batch N" is 0-based; the progress warning's batch is 1-based.
  const std::size_t at = r.log.find("Warning: loss is nan at epoch 2, batch ");
  ASSERT_NE(at, std::string::npos) << r.log;
  const int batch = std::stoi(r.log.substr(at + std::string("Warning: loss is nan at epoch 2, batch ").size()));
  EXPECT_NE(r.out.find("Batch " + std::to_string(batch - 1) + ": Invalid loss, terminating training"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.result.metrics.at("steps").as_int(), 4 + batch);
  fs::remove_all(root);
}

}  // namespace
}  // namespace tower::experiment
