// The tower executable: help, exit statuses, and every command on a small synthetic experiment.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "api/io/config.h"
#include "tests/tools/tools_testing.h"

namespace tower::experiment {
namespace {

namespace fs = std::filesystem;

struct Output {
  int status = -1;
  std::string text;  // stdout and stderr
};

// Runs a shell command line; returns its exit status and its output.
Output shell(const std::string& command) {
  Output out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.text.append(buf, n);
  const int status = pclose(p);
  out.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

Output tower(const std::string& args) { return shell(std::string(TOWER_COMMAND) + " " + args); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const std::string kExperiment = R"(name: tiny
seed: 5
data:
  source: synthetic
  shape: [8, 8, 1]
  classes: 3
  train_examples: 96
  test_examples: 30
model:
  layers:
    - {type: Conv2D, filters: 4, kernel_size: 3, activation: relu}
    - {type: Flatten}
    - {type: Dense, units: 3, activation: softmax}
compile:
  optimizer: {type: Adam, learning_rate: 0.01}
  loss: sparse_categorical_crossentropy
  metrics: [sparse_categorical_accuracy]
fit: {epochs: 2, batch_size_per_replica: 32}
)";

TEST(TowerCommand, HelpListsTheCommandsAndBadCommandLinesExitWithStatus2) {
  Output o = tower("--help");
  EXPECT_EQ(o.status, 0);
  for (const char* c : {"train", "evaluate", "predict", "summary", "check", "--set"}) EXPECT_TRUE(contains(o.text, c)) << c;
  o = tower("train --help");
  EXPECT_EQ(o.status, 0);
  EXPECT_TRUE(contains(o.text, "--resume RUN_DIR")) << o.text;
  EXPECT_EQ(tower("").status, 2);
  o = tower("trian x.yaml");
  EXPECT_EQ(o.status, 2);
  EXPECT_TRUE(contains(o.text, "unknown command 'trian'"));
  o = tower("check x.yaml --outt y");
  EXPECT_EQ(o.status, 2);
  EXPECT_TRUE(contains(o.text, "unknown option --outt")) << o.text;
  o = tower("evaluate x.yaml");
  EXPECT_EQ(o.status, 2);
  EXPECT_TRUE(contains(o.text, "missing --weights")) << o.text;
}

TEST(TowerCommand, CheckPrintsTheFirstProblemAtItsPosition) {
  const fs::path dir = testing::fresh_dir();
  fs::create_directories(dir);
  const fs::path good = dir / "good.yaml", bad = dir / "bad.yaml";
  std::ofstream(good) << kExperiment;
  std::string text = kExperiment;
  text.replace(text.find("epochs: 2"), 9, "epoch: 2");
  std::ofstream(bad) << text;
  Output o = tower("check " + good.string());
  EXPECT_EQ(o.status, 0) << o.text;
  EXPECT_TRUE(contains(o.text, "OK")) << o.text;
  o = tower("check " + bad.string());
  EXPECT_EQ(o.status, 2);
  EXPECT_TRUE(contains(o.text, bad.string() + ":18:7: fit: unknown key 'epoch' (did you mean 'epochs'?)")) << o.text;
  o = tower("check " + good.string() + " --set model.layers.0.type=Conv3D");
  EXPECT_EQ(o.status, 2);
  EXPECT_TRUE(contains(o.text, "--set model.layers.0.type=Conv3D: model.layers[0].type: unknown layer type 'Conv3D'"))
      << o.text;
  o = tower("check " + (dir / "missing.yaml").string());
  EXPECT_EQ(o.status, 2);
  EXPECT_TRUE(contains(o.text, "cannot open the experiment file")) << o.text;
  fs::remove_all(dir);
}

TEST(TowerCommand, TrainEvaluatePredictAndSummary) {
  const fs::path dir = testing::fresh_dir();
  fs::create_directories(dir);
  const fs::path file = dir / "tiny.yaml";
  std::ofstream(file) << kExperiment;
  const std::string run = (dir / "run").string();

  Output o = tower("train " + file.string() + " --out " + run + " --set fit.verbose=2");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_TRUE(contains(o.text, "Epoch 2/2")) << o.text;
  for (const char* f : {"config.yaml", "summary.txt", "history.csv", "events.jsonl", "final.weights", "metrics.json",
                        "checkpoints/state.weights", "checkpoints/epoch-001.weights", "checkpoints/epoch-002.weights"})
    EXPECT_TRUE(fs::exists(fs::path(run) / f)) << f;
  // history.csv: a header and one row per epoch; metrics.json: the test split's evaluation.
  std::ifstream history(fs::path(run) / "history.csv");
  std::string header, row;
  std::getline(history, header);
  EXPECT_EQ(header, "epoch,loss,sparse_categorical_accuracy,val_loss,val_sparse_categorical_accuracy");
  int rows = 0;
  while (std::getline(history, row)) ++rows;
  EXPECT_EQ(rows, 2);
  std::ifstream mf(fs::path(run) / "metrics.json");
  const Config metrics = Config::parse_json(std::string(std::istreambuf_iterator<char>(mf), {}));
  EXPECT_EQ(metrics.at("steps").as_int(), 6);
  const double test_loss = metrics.at("test").at("loss").as_double();

  // The run's config.yaml runs again, to the same place.
  o = tower("check " + run + "/config.yaml");
  EXPECT_EQ(o.status, 0) << o.text;

  o = tower("evaluate " + file.string() + " --weights " + run);
  ASSERT_EQ(o.status, 0) << o.text;
  char expected[64];
  std::snprintf(expected, sizeof expected, "split: loss: %.4f", test_loss);
  EXPECT_TRUE(contains(o.text, expected)) << o.text << "\nexpected " << expected;

  const std::string images = (fs::path(TOWER_TEST_DATA_DIR) / "data" / "images").string();
  o = tower("predict " + file.string() + " --weights " + run + "/final.weights --input " + images + " --top 2");
  ASSERT_EQ(o.status, 0) << o.text;
  int lines = 0;
  for (std::size_t at = 0; (at = o.text.find("\tclass_", at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 7 * 2) << o.text;  // 7 images, 2 classes each
  EXPECT_TRUE(contains(o.text, images + "/birds/b0.png\tclass_")) << o.text;

  o = tower("summary " + file.string());
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_TRUE(contains(o.text, "Total params: 475")) << o.text;  // (3*3*1*4 + 4) + (6*6*4*3 + 3)
  EXPECT_TRUE(contains(o.text, "global batch 32")) << o.text;

  o = tower("train " + file.string() + " --out " + run);
  EXPECT_EQ(o.status, 1);
  EXPECT_TRUE(contains(o.text, "already exists and is not empty")) << o.text;
  fs::remove_all(dir);
}


// A run directory of an image-folder experiment is usable from any working directory: its config.yaml holds the
// data folder resolved, and predict names the classes (the folders) the weights were trained on.
TEST(TowerCommand, AnImageFolderRunWorksFromAnyWorkingDirectory) {
  const fs::path dir = testing::fresh_dir();
  fs::create_directories(dir / "work");
  fs::create_directories(dir / "elsewhere");
  fs::copy(fs::path(TOWER_TEST_DATA_DIR) / "data" / "images", dir / "work" / "images", fs::copy_options::recursive);
  std::ofstream(dir / "work" / "exp.yaml") << R"(name: folders
seed: 3
data:
  source: image_directory
  directory: images
  image_size: [6, 5]
  color_mode: grayscale
  train: {split: .}
  validation: {split: .}
model:
  layers:
    - {type: Flatten}
    - {type: Dense, units: 3, activation: softmax}
compile: {optimizer: adam, loss: sparse_categorical_crossentropy}
fit: {epochs: 1, batch_size_per_replica: 4, verbose: 0}
)";
  const std::string work = "cd " + (dir / "work").string() + " && ";
  const std::string elsewhere = "cd " + (dir / "elsewhere").string() + " && ";
  const std::string tower_bin = std::string(TOWER_COMMAND) + " ";
  Output o = shell(work + tower_bin + "train exp.yaml --out ../run");
  ASSERT_EQ(o.status, 0) << o.text;
  o = shell(elsewhere + tower_bin + "evaluate ../run/config.yaml --weights ../run --split validation");
  EXPECT_EQ(o.status, 0) << o.text;
  o = shell(elsewhere + tower_bin + "train ../run/config.yaml --resume ../run --set fit.epochs=2");
  EXPECT_EQ(o.status, 0) << o.text;
  o = shell(work + tower_bin + "predict exp.yaml --weights ../run --input images/birds/b0.png --top 3");
  ASSERT_EQ(o.status, 0) << o.text;
  for (const char* name : {"\tbirds ", "\tcats ", "\tdogs "}) EXPECT_TRUE(contains(o.text, name)) << o.text;
  o = shell(work + tower_bin + "predict exp.yaml --weights ../run/checkpoints/epoch-001.weights --input images --top 1");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_FALSE(contains(o.text, "\t0 ")) << o.text;
  fs::remove_all(dir);
}

// Bad input to predict and evaluate: an IDX file of no images is told, not a crash; an unknown split is a bad
// command line (status 2), told before the data is read.
TEST(TowerCommand, AnEmptyIdxFileAndAnUnknownSplitAreTold) {
  const fs::path dir = testing::fresh_dir();
  fs::create_directories(dir);
  const fs::path file = dir / "tiny.yaml";
  std::ofstream(file) << kExperiment;
  const std::string run = (dir / "run").string();
  ASSERT_EQ(tower("train " + file.string() + " --out " + run + " --set fit.epochs=1 --set fit.verbose=0").status, 0);
  const fs::path empty = dir / "empty-images-idx3-ubyte";
  {
    std::ofstream idx(empty, std::ios::binary);
    const unsigned char header[16] = {0, 0, 8, 3, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 8};
    idx.write(reinterpret_cast<const char*>(header), sizeof header);
  }
  Output o = tower("predict " + file.string() + " --weights " + run + " --input " + empty.string());
  EXPECT_EQ(o.status, 1) << o.text;
  EXPECT_TRUE(contains(o.text, empty.string() + " holds no images")) << o.text;

  o = tower("evaluate " + file.string() + " --weights " + run + " --split train");
  EXPECT_EQ(o.status, 2) << o.text;
  EXPECT_TRUE(contains(o.text, "--split takes test or validation, got 'train'")) << o.text;
  fs::remove_all(dir);
}

// --monitor starts the monitor (here a stand-in script that records its arguments) on the run directory once
// it exists; a missing monitor or display is told before anything is made.
TEST(TowerCommand, MonitorFlagStartsTheMonitorOnTheRunDirectory) {
  const fs::path dir = testing::fresh_dir();
  fs::create_directories(dir);
  const fs::path file = dir / "tiny.yaml", fake = dir / "fake-monitor", seen = dir / "monitor-args.txt";
  std::ofstream(file) << kExperiment;
  std::ofstream(fake) << "#!/bin/sh\n[ -f \"$2/config.yaml\" ] && echo \"$@\" > " << seen.string() << ".tmp && mv "
                      << seen.string() << ".tmp " << seen.string() << "\n";
  fs::permissions(fake, fs::perms::owner_all);
  const std::string run = (dir / "run").string(), train = " train " + file.string() + " --set fit.epochs=1 --out ";
  const std::string tower_command = TOWER_COMMAND;

  Output o = shell("env TOWER_MONITOR=" + fake.string() + " QT_QPA_PLATFORM=offscreen " + tower_command + train + run +
                   " --monitor --set fit.verbose=0");
  ASSERT_EQ(o.status, 0) << o.text;
  EXPECT_TRUE(contains(o.text, "Monitor: " + fake.string() + " " + run + " (pid ")) << o.text;
  for (int i = 0; i < 200 && !fs::exists(seen); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::ifstream args(seen);
  std::string line;
  std::getline(args, line);
  EXPECT_EQ(line, "--no-listen " + run);

  o = shell("env TOWER_MONITOR=" + (dir / "nowhere").string() + " QT_QPA_PLATFORM=offscreen " + tower_command + train +
            run + "-a --monitor");
  EXPECT_EQ(o.status, 1);
  EXPECT_TRUE(contains(o.text, "--monitor: TOWER_MONITOR=" + (dir / "nowhere").string() + " is not an executable"))
      << o.text;
  o = shell("env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM TOWER_MONITOR=" + fake.string() + " " +
            tower_command + train + run + "-b --monitor");
  EXPECT_EQ(o.status, 1);
  EXPECT_TRUE(contains(o.text, "--monitor: no display")) << o.text;
  EXPECT_FALSE(fs::exists(run + "-a"));
  EXPECT_FALSE(fs::exists(run + "-b"));
  o = tower(train + run + "-c --monitor=yes");
  EXPECT_EQ(o.status, 2);
  EXPECT_TRUE(contains(o.text, "--monitor takes no value")) << o.text;
  o = tower(train + run + "-c --monitor --monitor");
  EXPECT_EQ(o.status, 2);
  EXPECT_TRUE(contains(o.text, "--monitor given twice")) << o.text;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tower::experiment
