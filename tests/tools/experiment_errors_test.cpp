// Errors point at the YAML: an unknown key gives file:line:column and the closest valid key; a wrong type names
// the key and the expected type; an unknown layer type lists the known ones; a missing data file names the path
// and what provides it. And no bad file crashes or hangs.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "api/core/random.h"
#include "api/engine/layer_registry.h"
#include "tests/tools/tools_testing.h"
#include "tools/experiment/callbacks_builder.h"
#include "tools/experiment/compile_builder.h"
#include "tools/experiment/data_pipeline.h"
#include "tools/experiment/experiment.h"
#include "tools/experiment/model_builder.h"
#include "tools/experiment/strategy.h"

namespace tower::experiment {
namespace {

using testing::expect_error_at;

// Everything `tower check` does: schema, data files, model, compile, callbacks, strategy.
void check(const std::string& text, const std::vector<std::string>& overrides = {}) {
  const Experiment e = Experiment::parse(text, "exp.yaml", overrides);
  const RunStrategy strategy(e);
  check_data_files(e);
  Model model = build_model(e, example_shape(e));
  compile_model(e, model);
  build_callbacks(e, "/tmp");
}

const std::string kValid = R"(seed: 1
data:
  source: synthetic
  shape: [8, 8, 1]
  classes: 3
model:
  layers:
    - {type: Conv2D, filters: 4, kernel_size: 3, activation: relu}
    - {type: Flatten}
    - {type: Dense, units: 3, activation: softmax}
compile:
  optimizer: {type: Adam, learning_rate: 0.001}
  loss: sparse_categorical_crossentropy
  metrics: [sparse_categorical_accuracy]
fit:
  epochs: 2
  batch_size_per_replica: 16
)";

// kValid with `from` replaced by `to` (which must occur once).
std::string with(const std::string& from, const std::string& to) {
  std::string s = kValid;
  const std::size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(s.find(from, at + 1), std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(ExperimentErrors, TheValidBaseExperimentChecks) { EXPECT_NO_THROW(check(kValid)); }

TEST(ExperimentErrors, AnUnknownKeyGivesItsPositionAndTheClosestKey) {
  expect_error_at([] { check(with("  epochs: 2", "  epoch: 2")); }, "exp.yaml", 16, 3,
                  {"fit: unknown key 'epoch' (did you mean 'epochs'?)", "batch_size_per_replica"});
  expect_error_at([] { check(with("seed: 1", "sed: 1")); }, "exp.yaml", 1, 1, {"unknown key 'sed'", "'seed'"});
  expect_error_at([] { check(with("  classes: 3", "  clases: 3")); }, "exp.yaml", 5, 3,
                  {"data: unknown key 'clases' (did you mean 'classes'?)"});
  // Inside a layer, the registry's own key list: Conv2D's arguments.
  expect_error_at([] { check(with("filters: 4", "filtres: 4")); }, "exp.yaml", 8, 22,
                  {"model.layers[0]", "unknown argument 'filtres' (did you mean 'filters'?)"});
  // Inside an optimizer.
  expect_error_at([] { check(with("learning_rate: 0.001", "learning_rat: 0.001")); }, "exp.yaml", 12, 27,
                  {"compile.optimizer", "unknown argument 'learning_rat' (did you mean 'learning_rate'?)"});
  // From the command line.
  expect_error_at([] { check(kValid, {"fit.epoch=1"}); }, "--set fit.epoch=1", 0, 0,
                  {"unknown key 'epoch' (did you mean 'epochs'?)"});
}

TEST(ExperimentErrors, AWrongTypeNamesTheKeyAndTheExpectedType) {
  expect_error_at([] { check(with("epochs: 2", "epochs: two")); }, "exp.yaml", 16, 11,
                  {"fit.epochs: expected an int, got string \"two\""});
  expect_error_at([] { check(with("shape: [8, 8, 1]", "shape: 8")); }, "exp.yaml", 4, 10,
                  {"data.shape: expected a list of ints, got int 8"});
  expect_error_at([] { check(with("filters: 4", "filters: [4]")); }, "exp.yaml", 8, 31,
                  {"model.layers[0]", "argument 'filters'", "expected an int"});
  expect_error_at([] { check(with("learning_rate: 0.001", "learning_rate: fast")); }, "exp.yaml", 12, 42,
                  {"compile.optimizer", "learning_rate", "expected a number or a schedule"});
  expect_error_at([] { check(kValid, {"fit.batch_size_per_replica=0"}); }, "--set fit.batch_size_per_replica=0", 0,
                  0, {"fit.batch_size_per_replica: must be >= 1, got 0"});
  expect_error_at([] { check(with("source: synthetic", "source: synthetc")); }, "exp.yaml", 3, 11,
                  {"data.source: unknown value 'synthetc' (did you mean 'synthetic'?)", "fashion_mnist"});
}

// A whole number too large for its key is named as written, never as what a wrapped cast made of it.
TEST(ExperimentErrors, AnOutOfRangeNumberIsNamedAsGiven) {
  expect_error_at([] { check(kValid, {"seed=1e30"}); }, "--set seed=1e30", 0, 0,
                  {"seed: expected an int", "e+30", "outside the 64-bit integer range"});
  expect_error_at([] { check(kValid, {"fit.epochs=3e9"}); }, "--set fit.epochs=3e9", 0, 0,
                  {"fit.epochs: must be in [1, 2147483647], got 3000000000"});
  expect_error_at([] { check(kValid, {"data.prefetch=4294967297"}); }, "--set data.prefetch=4294967297", 0, 0,
                  {"data.prefetch: must be in [0, 2147483647], got 4294967297"});
  expect_error_at(
      [] { check(with("  batch_size_per_replica: 16", "  batch_size_per_replica: 16\n  class_weight: {99999999999: 1}")); },
      "exp.yaml", 0, 0, {"fit.class_weight", "99999999999"});
}

TEST(ExperimentErrors, AnUnknownLayerTypeListsTheKnownOnes) {
  expect_error_at([] { check(with("type: Conv2D", "type: Conv2d")); }, "exp.yaml", 8, 14,
                  {"model.layers[0].type: unknown layer type 'Conv2d' (did you mean 'Conv2D'?)", "known: Activation",
                   "BatchNormalization", "DepthwiseConv2D", "MaxPooling2D"});
  expect_error_at([] { check(with("optimizer: {type: Adam, learning_rate: 0.001}", "optimizer: adamm")); },
                  "exp.yaml", 12, 14, {"unknown optimizer 'adamm' (did you mean 'adam'?)", "sgd"});
  expect_error_at([] { check(with("loss: sparse_categorical_crossentropy", "loss: sparse_categorical_crossentropi")); },
                  "exp.yaml", 13, 9, {"unknown loss 'sparse_categorical_crossentropi'", "did you mean"});
  expect_error_at([] { check(kValid + "callbacks:\n  - {type: EarlyStoping, patience: 2}\n"); }, "exp.yaml", 19, 12,
                  {"unknown callback 'EarlyStoping' (did you mean 'EarlyStopping'?)", "ReduceLROnPlateau"});
  expect_error_at([] { check("data: {source: synthetic}\nmodel: {application: MobileNetV3}\n"
                             "compile: {optimizer: adam, loss: mse}\n"); },
                  "exp.yaml", 2, 22, {"unknown application 'MobileNetV3' (did you mean 'MobileNetV2'?)"});
}

TEST(ExperimentErrors, AMissingDataFileNamesThePathAndWhatProvidesIt) {
  const std::filesystem::path empty = testing::fresh_dir();
  std::filesystem::create_directories(empty);
  const std::string data = "data:\n  source: fashion_mnist\n  directory: " + empty.string() + "\n";
  const std::string rest = "model: {layers: [{type: Flatten}, {type: Dense, units: 10}]}\n"
                           "compile: {optimizer: adam, loss: sparse_categorical_crossentropy}\n";
  expect_error_at([&] { check(data + rest); }, "exp.yaml", 3, 14,
                  {"missing " + (empty / "train-images-idx3-ubyte").string() + "(.gz)", "Fashion-MNIST IDX files",
                   "dataset-fashion-mnist"});
  expect_error_at([&] { check("data:\n  source: cifar10\n  directory: " + empty.string() + "\n" + rest); }, "exp.yaml",
                  3, 14, {"missing " + (empty / "data_batch_1.bin").string(), "cifar-10-binary.tar.gz"});
  expect_error_at([&] { check("data:\n  source: mnist\n  directory: /no/such/dir\n" + rest); }, "exp.yaml", 3, 14,
                  {"missing the folder /no/such/dir", "MNIST has no Debian package"});
  expect_error_at([&] { check("data:\n  source: cifar10\n" + rest); }, "exp.yaml", 2, 3,
                  {"source cifar10 needs 'directory'"});
  // The default Fashion-MNIST directory names the Debian package that provides it.
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    expect_error_at([&] { check("data: {source: fashion_mnist}\n" + rest); }, "(default)", 0, 0,
                    {"/usr/share/datasets/fashion-mnist", "apt-get install dataset-fashion-mnist"});
  }
  std::filesystem::remove_all(empty);
}

TEST(ExperimentErrors, ShapeAndGraphErrorsNameTheLayerAndThePlace) {
  // A layer that does not fit its input: the registry's ShapeError, at the layer.
  expect_error_at([] {
                    check(with("    - {type: Flatten}\n",
                               "    - {type: Flatten}\n    - {type: Conv2D, filters: 2, kernel_size: 3}\n"));
                  },
                  "exp.yaml", 10, 7, {"model.layers[2]", "Conv2D"});
  // A functional node naming an input that does not exist.
  const std::string graph = R"(data: {source: synthetic, shape: [4, 4, 1]}
model:
  nodes:
    - {name: x, type: Input}
    - {name: a, type: Flatten}
    - {name: b, type: Dense, units: 2, inputs: [a, aa]}
compile: {optimizer: adam, loss: mse}
)";
  expect_error_at([&] { check(graph); }, "exp.yaml", 6, 52, {"no node named 'aa'", "nodes so far: x, a"});
}

// central_storage: its keys, its devices checked as mirrored's are, and the strategy it makes.
TEST(ExperimentErrors, CentralStorageStrategy) {
  const Experiment e = Experiment::parse(
      kValid + "strategy: {type: central_storage, compute_devices: [cpu:0, cpu:1, cpu:2], parameter_device: cpu}\n",
      "exp.yaml");
  EXPECT_EQ(RunStrategy(e).num_replicas_in_sync(), 3);
  EXPECT_EQ(RunStrategy(e).spec().parameter_device, "cpu");
  check(kValid + "strategy: {type: central_storage}\n");
  expect_error_at([] { check(kValid + "strategy: {type: central_storage, compute_devices: []}\n"); }, "exp.yaml", 18,
                  52, {"strategy.compute_devices: an empty device list; leave 'compute_devices' out"});
  expect_error_at([] { check(kValid + "strategy: {type: central_storage, parameter_device: tpu:0}\n"); }, "exp.yaml",
                  18, 53, {"strategy.parameter_device: unknown device 'tpu:0'"});
  expect_error_at([] { check(kValid + "strategy: {type: central_storage, devices: [cpu:0]}\n"); }, "exp.yaml", 18,
                  35, {"'devices' applies to strategy type mirrored, not central_storage"});
  expect_error_at([] { check(kValid + "strategy: {type: mirrored, compute_devices: [cpu:0]}\n"); }, "exp.yaml", 18,
                  28, {"'compute_devices' applies to strategy type central_storage, not mirrored"});
}

TEST(ExperimentErrors, CombinationsThatDoNotFitAreRefused) {
  expect_error_at([] { check(with("  classes: 3\n", "  classes: 3\n  image_size: [8, 8]\n")); }, "exp.yaml", 6, 3,
                  {"'image_size' applies to source image_directory, not synthetic"});
  // The location names the key; the message follows it after one separator.
  expect_error_at([] { check(kValid + "strategy: {type: mirrored, devices: [tpu:0]}\n"); }, "exp.yaml", 18, 38,
                  {"strategy.devices[0]: unknown device 'tpu:0'. Available devices: cpu:0"});
  expect_error_at([] { check(kValid + "strategy: {type: one_device, device: tpu:1}\n"); }, "exp.yaml", 18, 38,
                  {"strategy.device: unknown device 'tpu:1'. Available devices: cpu:0"});
  expect_error_at([] { check(kValid + "strategy: {type: default, devices: [cpu]}\n"); }, "exp.yaml", 18, 27,
                  {"'devices' applies to strategy type mirrored, not default"});
  expect_error_at([] { check(kValid + "strategy: {type: mirrored, bucket_cap_mb: 0}\n"); }, "exp.yaml", 18, 43,
                  {"strategy.bucket_cap_mb: the gradient bucket cap must be a positive number of MiB"});
  expect_error_at([] { check(kValid, {"data.preprocessing=[{type: random_flip}, {type: resize, height: 4, width: 4}]"}); },
                  "--set data.preprocessing=[{type: random_flip}, {type: resize, height: 4, width: 4}]", 0, 0,
                  {"'resize' cannot follow a random step"});
  expect_error_at([] { check(kValid, {"data.preprocessing=[{type: random_crop, height: 9, width: 9}]"}); },
                  "--set data.preprocessing=[{type: random_crop, height: 9, width: 9}]", 0, 0,
                  {"a 9x9 crop of 8x8 images"});
  expect_error_at([] { check(kValid, {"data.validation={split: test, fraction: 0.1}"}); },
                  "--set data.validation={split: test, fraction: 0.1}", 0, 0, {"either 'split' or 'fraction'"});
  expect_error_at([] { check("data: {source: synthetic}\ncompile: {optimizer: adam, loss: mse}\n"); }, "exp.yaml", 1,
                  1, {"missing required section 'model'"});
  expect_error_at([] { check(with("  layers:\n", "  application: MobileNetV2\n  layers:\n")); }, "exp.yaml", 7, 3,
                  {"exactly one of 'application'"});
}

// Every line cut, every character replaced by characters that break YAML or types: each variant must either check
// or throw ExperimentError, quickly; nothing else escapes (no crash, no other exception, no hang).
TEST(ExperimentErrors, NoBadFileCrashesOrHangs) {
  std::vector<std::string> variants;
  for (std::size_t cut = 0; cut < kValid.size(); cut += 7) variants.push_back(kValid.substr(0, cut));
  for (std::size_t i = 0; i < kValid.size(); i += 5)
    for (const char* bad : {"[", "{", ":", "-", "\"", "&a", "*a", "!!int ", "\t", "- ", "0", "\n  "})
      variants.push_back(kValid.substr(0, i) + bad + kValid.substr(i + 1));
  variants.push_back("a: &x [*x]\n");
  variants.push_back(std::string("data: \x01\xff\xfe\n"));
  variants.push_back(std::string(10000, '['));
  int ok = 0, located = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& v : variants) {
    try {
      check(v);
      ++ok;
    } catch (const ExperimentError& e) {
      ++located;
      EXPECT_EQ(e.mark().file.empty(), false) << v;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an ExperimentError: " << e.what() << "\nfor:\n" << v;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(ok + located, static_cast<int>(variants.size()));
  EXPECT_GT(located, static_cast<int>(variants.size()) / 2);
  EXPECT_LT(seconds, 60.0) << variants.size() << " variants";
}

}  // namespace
}  // namespace tower::experiment
