// Run directories: one per run, never shared by two runs started together; --weights RUN_DIR takes the latest
// checkpoint by epoch number.
#include "tools/experiment/run_directory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tests/tools/tools_testing.h"
#include "tools/experiment/runner.h"

namespace tower::experiment {
namespace {

namespace fs = std::filesystem;

TEST(RunDirectory, ResolveWeightsTakesTheLatestEpochByNumber) {
  const fs::path run = testing::fresh_dir();
  fs::create_directories(run / "checkpoints");
  for (const char* name : {"epoch-002.weights", "epoch-999.weights", "epoch-1000.weights", "epoch-1001.weights",
                           "epoch-010.weights", "state.weights"})
    std::ofstream(run / "checkpoints" / name) << "x";
  EXPECT_EQ(resolve_weights(run.string()), (run / "checkpoints" / "epoch-1001.weights").string());
  fs::remove_all(run);
}

TEST(RunDirectory, CreateUniqueNeverGivesTwoRunsOneDirectory) {
  const fs::path root = testing::fresh_dir();
  const std::string base = (root / "runs" / "exp-20260101-120000").string();
  EXPECT_EQ(RunDirectory::create_unique(base).path(), base);
  EXPECT_EQ(RunDirectory::create_unique(base).path(), base + "-2");
  EXPECT_TRUE(fs::is_directory(fs::path(base + "-2") / "checkpoints"));
  std::vector<std::string> made(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < made.size(); ++i)
    threads.emplace_back([&, i] { made[i] = RunDirectory::create_unique(base).path(); });
  for (std::thread& t : threads) t.join();
  const std::set<std::string> distinct(made.begin(), made.end());
  EXPECT_EQ(distinct.size(), made.size());
  EXPECT_EQ(distinct.count(base), 0u);
  fs::remove_all(root);
}

// Quick runs of a sweep, started within one second, each get a run directory of their own.
TEST(RunDirectory, QuickRunsInTheDefaultPlaceGetDirectoriesOfTheirOwn) {
  const fs::path root = testing::fresh_dir();
  fs::create_directories(root);
  const fs::path cwd = fs::current_path();
  fs::current_path(root);
  const Experiment e = Experiment::parse(R"(name: quick
data: {source: synthetic, shape: [4, 4, 1], classes: 2, train_examples: 8, test_examples: 4}
model: {layers: [{type: Flatten}, {type: Dense, units: 2, activation: softmax}]}
compile: {optimizer: sgd, loss: sparse_categorical_crossentropy}
fit: {epochs: 1, batch_size_per_replica: 8, verbose: 0}
output: {epoch_weights: false, batch_events: false}
)", "quick.yaml");
  std::set<std::string> dirs;
  std::string error;
  for (int i = 0; i < 3 && error.empty(); ++i) {
    TrainOptions o;
    o.handle_sigint = false;
    std::ostringstream quiet;
    o.log = &quiet;
    try {
      dirs.insert(train(e, o).run_directory);
    } catch (const std::exception& x) {
      error = x.what();
    }
  }
  fs::current_path(cwd);
  EXPECT_EQ(error, "");
  EXPECT_EQ(dirs.size(), 3u);
  for (const std::string& d : dirs) EXPECT_TRUE(fs::exists(root / d / "final.weights")) << d;
  fs::remove_all(root);
}

}  // namespace
}  // namespace tower::experiment
