// ParameterServerStrategy with real processes on this machine: the ParameterServer.* tests start a cluster (ports
// chosen free on 127.0.0.1) whose every process runs this test binary's ParameterServerRole.Run in its role (that
// test does nothing unless TOWER_TEST_PS_OUT is set). The chief writes its final weights, its History, the batches
// its callbacks saw and, where asked, its test accuracy or the error that ended its fit to TOWER_TEST_PS_OUT.
//
//   OneWorkerEqualsSynchronousSgd       1 worker and 1 parameter server, SGD: after 16 steps (2 epochs of 8) the
//                                       weights equal one process's fit on the same batches (1e-5), and so do the
//                                       epochs' losses.
//   OneWorkerTwoShardsEqualsSynchronousAdam  the same with the variables sharded over 2 parameter servers, each
//                                       holding Adam's slots for its shard.
//   TwoWorkersTrainFashionMnistLikeMirrored  2 asynchronous workers, each reading 12000 Fashion-MNIST
//                                       images in its own order, reach on average over 5 clusters
//                                       MirroredStrategy's test accuracy (2 CPU replicas, the same 12000 images,
//                                       the same batch size per update and number of updates) within 1 point.
//   KilledWorkerDoesNotStopTraining     the chief SIGKILLs worker 1 at its 5th batch: every step still runs (on
//                                       worker 0), fit ends normally, the chief says the worker failed.
//   KilledParameterServerIsAClearError  the chief SIGKILLs parameter server 1 at its 5th batch: fit on the chief
//                                       throws an error naming that parameter server; every process ends.
//   OneWorkerOnTheGpuEqualsSynchronousSgdOnTheCpu_CUDA  OneWorkerEqualsSynchronousSgd with the worker on cuda:0
//                                       and the chief on its default device (the GPU): within 1e-2 of synchronous
//                                       SGD on the CPU, the chief's evaluate too.
//   TwoWorkersOnTheGpuTrain_CUDA        2 workers on their default device (the first GPU; one GPU each when there
//                                       are two), 60 steps: every step runs, the loss falls.
// The clusters choose their devices in TOWER_CONFIG: the CPU everywhere but in the _CUDA tests. Every process
// reports its compute device and where its model's weights ended, and the chief its evaluate of the training data.
// Without gRPC in the build they skip (saying so).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "distribute/ps_cluster_testing.h"
#include "distribute/replica_testing.h"
#include "tower/tower.h"

namespace tower {
namespace {

namespace fs = std::filesystem;
using namespace testing;  // the cluster harness (ps_cluster_testing.h)

constexpr Index kFashionExamples = 12000;
constexpr Index kFashionBatch = 32;
constexpr int kFashionEpochs = 5;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Model fashion_mlp() {
  set_random_seed(kClusterSeed);
  auto x = Input({28, 28, 1});
  auto h = layers::Flatten()(x);
  h = layers::Dense({.units = 64, .activation = "relu"})(h);
  auto y = layers::Dense({.units = 10, .activation = "softmax"})(h);
  return Model(x, y);
}

bool have_fashion_mnist() {
  return fs::exists(fs::path(data::fashion_mnist::default_directory) / "train-images-idx3-ubyte.gz");
}

// The first kFashionExamples training images, shuffled with `seed` and batched.
data::Dataset fashion_train(Index batch, std::uint64_t seed) {
  return data::fashion_mnist::load("train").take(kFashionExamples).cache().shuffle(kFashionExamples, seed).batch(batch);
}

data::Dataset fashion_test() { return data::fashion_mnist::load("test").batch(500); }

// Steps per epoch of a scenario that is not "fashion".
std::int64_t steps_of(const std::string& scenario) {
  return scenario.starts_with("kill") || scenario == "two_workers" ? 30 : 8;
}

void write_history(std::ostream& out, const callbacks::History& h) {
  for (const std::string& key : h.keys())
    for (double v : h[key]) out << key << " " << v << "\n";
}

// One process of a cluster started by the tests below.
TEST(ParameterServerRole, Run) {
  const std::string out = env("TOWER_TEST_PS_OUT");
  if (out.empty()) GTEST_SKIP() << "runs only inside the clusters of ParameterServer.*";
  const std::string scenario = env("TOWER_TEST_PS_SCENARIO");
  distribute::ParameterServerOptions options;
  options.rpc_timeout_seconds = 20;
  options.step_timeout_seconds = 30;
  options.connect_timeout_seconds = 30;
  options.idle_timeout_seconds = 120;
  distribute::ParameterServerStrategy strategy(distribute::ClusterSpec::from_environment(), options);
  const bool fashion = scenario == "fashion";
  const std::string me = strategy.task_type() + std::to_string(strategy.task_index());
  Model model = [&] {
    auto scope = strategy.scope();
    Model m = fashion ? fashion_mlp() : cluster_convnet();
    optimizers::OptimizerPtr opt = cluster_optimizer(fashion ? "adam" : scenario);
    m.compile(opt, losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
    return m;
  }();
  FitOptions fit;
  fit.verbose = 0;
  fit.epochs = fashion ? kFashionEpochs : 2;
  fit.steps_per_epoch = fashion ? kFashionExamples / kFashionBatch : steps_of(scenario);
  auto batches = std::make_shared<int>(0);
  callbacks::LambdaCallbackOptions count;
  count.on_train_batch_end = [batches, victim = std::atoi(env("TOWER_TEST_PS_KILL_PID").c_str()),
                               gate = env("TOWER_TEST_PS_GATE")](std::int64_t, const callbacks::Logs&) {
    ++*batches;
    if (*batches == 5 && victim > 0) kill(victim, SIGKILL);
    // The test's intruder has had its first calls refused before training goes on (ps_cluster_testing.h).
    for (int waited = 0; *batches == 1 && !gate.empty() && !fs::exists(gate) && waited < 3000; ++waited)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  fit.callbacks.push_back(std::make_shared<callbacks::LambdaCallback>(count));
  // Each worker reads the whole training set in its own order (TF's per-worker dataset_fn): however the chief
  // happens to share the steps between the workers, the updates see the data Mirrored's do.
  const data::Dataset train = fashion ? fashion_train(kFashionBatch, 7 + static_cast<std::uint64_t>(strategy.task_index()))
                                      : cluster_examples(64, 11);
  callbacks::History history;
  try {
    history = model.fit(train, fit);
  } catch (const std::exception& e) {
    std::ofstream(out + "/" + me + ".error") << e.what() << "\n";
    return;
  }
  const auto report_device = [&] {
    std::ofstream(out + "/" + me + ".device") << strategy.devices().at(0) << " "
                                              << model.weights().at(0)->value.device().to_string() << "\n";
  };
  if (!strategy.is_chief()) return report_device();
  model.save_weights(out + "/chief.weights");
  std::ofstream report(out + "/chief.txt");
  write_history(report, history);
  report << "batches " << *batches << "\n";
  EvaluateOptions eval;
  eval.verbose = 0;
  if (fashion)
    report << "test_accuracy " << *model.evaluate(fashion_test(), eval).get("sparse_categorical_accuracy") << "\n";
  else
    report << "evaluate_loss " << *model.evaluate(train, eval).get("loss") << "\n";
  report_device();
}

TEST(ParameterServer, OneWorkerEqualsSynchronousSgd) { expect_one_worker_matches_one_process("sgd", 1, kCpuCluster); }

TEST(ParameterServer, OneWorkerTwoShardsEqualsSynchronousAdam) {
  expect_one_worker_matches_one_process("adam", 2, kCpuCluster);
}

TEST(ParameterServer, OneWorkerOnTheGpuEqualsSynchronousSgdOnTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible";
  expect_one_worker_matches_one_process("sgd", 1, kGpuWorker);
}

TEST(ParameterServer, TwoWorkersOnTheGpuTrain_CUDA) {
  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU visible";
  const bool two_gpus = cuda_device_count() >= 2;
  const fs::path dir = fresh_dir("two_workers");
  // No choice: every process on the first GPU it sees; with two GPUs, one per worker.
  const ClusterRun run =
      run_cluster(dir, "two_workers", 2, 1, "", 180, two_gpus ? R"("worker_devices": ["cuda:0", "cuda:1"])" : "");
  expect_every_process_ended_well(run);
  EXPECT_EQ(device_report(dir, "worker0"), "gpu:0 cuda:0") << run.logs;
  EXPECT_EQ(device_report(dir, "worker1"), two_gpus ? "gpu:1 cuda:1" : "gpu:0 cuda:0") << run.logs;
  EXPECT_EQ(device_report(dir, "ps0"), "cpu:0 cpu") << run.logs;
  const auto report = read_report(dir / "chief.txt");
  ASSERT_TRUE(report.count("batches")) << run.logs;
  EXPECT_EQ(report.at("batches")[0], 60) << "every scheduled step ran";
  ASSERT_EQ(report.at("loss").size(), 2u);
  EXPECT_LT(report.at("loss")[1], report.at("loss")[0]) << "training went on";
  ASSERT_TRUE(report.count("evaluate_loss")) << run.logs;
  EXPECT_TRUE(std::isfinite(report.at("evaluate_loss")[0]));
  std::cout << "[ ParameterServer ] 2 workers on the GPU: epoch losses " << report.at("loss")[0] << ", "
            << report.at("loss")[1] << " (cluster " << run.seconds << " s)\n";
  fs::remove_all(dir);
}

TEST(ParameterServer, TwoWorkersTrainFashionMnistLikeMirrored) {
  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  if (!have_fashion_mnist()) GTEST_SKIP() << "Debian package dataset-fashion-mnist is not installed";
  // Asynchronous training is not deterministic: its test accuracy varies by about half a point from run to run
  // (the order in which the two workers' updates land), so the mean of five clusters is compared.
  constexpr int kRuns = 5;
  double ps_accuracy = 0, seconds = 0;
  std::string each;
  for (int r = 0; r < kRuns; ++r) {
    const fs::path dir = fresh_dir("fashion" + std::to_string(r));
    const ClusterRun run = run_cluster(dir, "fashion", 2, 1, "", 240);
    expect_every_process_ended_well(run);
    const auto report = read_report(dir / "chief.txt");
    ASSERT_TRUE(report.count("test_accuracy")) << run.logs;
    ps_accuracy += report.at("test_accuracy")[0] / kRuns;
    each += (r ? ", " : "") + std::to_string(report.at("test_accuracy")[0]);
    seconds += run.seconds;
    fs::remove_all(dir);
  }

  distribute::MirroredStrategy mirrored({"cpu:0", "cpu:1"});
  Model model = [&] {
    auto scope = mirrored.scope();
    Model m = fashion_mlp();
    m.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
    return m;
  }();
  FitOptions options;
  options.epochs = kFashionEpochs;
  options.verbose = 0;
  model.fit(fashion_train(kFashionBatch, 7), options);
  EvaluateOptions eval;
  eval.verbose = 0;
  const double mirrored_accuracy = *model.evaluate(fashion_test(), eval).get("sparse_categorical_accuracy");
  std::cout << "[ ParameterServer ] Fashion-MNIST test accuracy after " << kFashionEpochs << " epochs: 2 workers "
            << ps_accuracy << " (mean of " << each << "), MirroredStrategy " << mirrored_accuracy << " (clusters "
            << seconds << " s)\n";
  EXPECT_GT(mirrored_accuracy, 0.75);
  EXPECT_NEAR(ps_accuracy, mirrored_accuracy, 0.01);
}

TEST(ParameterServer, KilledWorkerDoesNotStopTraining) {
  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  const fs::path dir = fresh_dir("kill_worker");
  const ClusterRun run = run_cluster(dir, "kill_worker", 2, 1, "worker1", 120);
  expect_every_process_ended_well(run, "worker1");
  EXPECT_FALSE(fs::exists(dir / "chief0.error")) << read_file(dir / "chief0.error");
  const auto report = read_report(dir / "chief.txt");
  ASSERT_TRUE(report.count("batches")) << run.logs;
  EXPECT_EQ(report.at("batches")[0], 60) << "every scheduled step ran";
  ASSERT_EQ(report.at("loss").size(), 2u);
  EXPECT_LT(report.at("loss")[1], report.at("loss")[0]) << "training went on";
  const std::string chief_log = read_file(dir / "chief0.log");
  const std::size_t said = chief_log.find("ParameterServerStrategy: worker 1 (");
  ASSERT_NE(said, std::string::npos) << run.logs;
  std::cout << "[ ParameterServer ] the chief said: " << chief_log.substr(said, chief_log.find('\n', said) - said)
            << " (cluster " << run.seconds << " s)\n";
  fs::remove_all(dir);
}

TEST(ParameterServer, KilledParameterServerIsAClearError) {
  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  const fs::path dir = fresh_dir("kill_ps");
  const ClusterRun run = run_cluster(dir, "kill_ps", 2, 2, "ps1", 120);
  expect_every_process_ended_well(run, "ps1");
  ASSERT_TRUE(fs::exists(dir / "chief0.error")) << "fit on the chief did not fail\n" << run.logs;
  const std::string error = read_file(dir / "chief0.error");
  EXPECT_NE(error.find("ParameterServerStrategy: parameter server 1 (" + std::string("127.0.0.1:")), std::string::npos)
      << error;
  EXPECT_NE(error.find("failed"), std::string::npos) << error;
  std::cout << "[ ParameterServer ] fit on the chief threw: " << error << " (cluster " << run.seconds << " s)\n";
  EXPECT_FALSE(fs::exists(dir / "chief.txt")) << "fit on the chief returned normally";
  fs::remove_all(dir);
}

TEST(ParameterServer, FitNeedsStepsPerEpoch) {
  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  distribute::ClusterSpec spec;
  spec.chief = {"127.0.0.1:" + std::to_string(free_port())};
  spec.worker = {"127.0.0.1:" + std::to_string(free_port())};
  spec.ps = {"127.0.0.1:" + std::to_string(free_port())};
  spec.task_type = "chief";
  distribute::ParameterServerStrategy strategy(spec);
  Model model = [&] {
    auto scope = strategy.scope();
    Model m = cluster_convnet();
    m.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
    return m;
  }();
  FitOptions options;
  options.verbose = 0;
  try {
    model.fit(cluster_examples(16, 1), options);
    FAIL() << "fit without steps_per_epoch did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs steps_per_epoch"), std::string::npos) << e.what();
  }
}

// The message ClusterSpec::from_json throws for `json`, or "no error".
std::string error_of(const std::string& json) {
  try {
    distribute::ClusterSpec::from_json(json);
  } catch (const std::invalid_argument& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

TEST(ParameterServer, ClusterSpecErrorsNameTheKey) {
  const std::string cluster = R"("cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"], "ps": ["d:1"]})";
  const distribute::ClusterSpec spec = distribute::ClusterSpec::from_json("{" + cluster + R"(, "task": {"type": "worker", "index": 1}})");
  EXPECT_EQ(spec.worker, (std::vector<std::string>{"b:1", "c:1"}));
  EXPECT_EQ(spec.task_type, "worker");
  EXPECT_EQ(spec.task_index, 1);
  EXPECT_NE(error_of("{" + cluster + R"(, "task": {"type": "worker", "index": 2}})").find("task index 2 of \"worker\" is out of range"), std::string::npos);
  EXPECT_NE(error_of("{" + cluster + R"(, "task": {"type": "evaluator"}})").find("unknown task type \"evaluator\""), std::string::npos);
  EXPECT_NE(error_of(R"({"cluster": {"chief": ["a:1"], "worker": ["b:1"]}, "task": {"type": "chief"}})").find("no \"ps\""), std::string::npos);
  EXPECT_NE(error_of(R"({"cluster": {"chief": ["a:1"], "worker": ["b"], "ps": ["d:1"]}, "task": {"type": "chief"}})").find("\"cluster\".worker holds \"b\""), std::string::npos);
  EXPECT_NE(error_of("{" + cluster + "}").find("\"task\""), std::string::npos);
}

distribute::ClusterSpec spec_of(const std::string& type, int index) {
  distribute::ClusterSpec spec{{"a:1"}, {"b:1", "c:1"}, {"d:1"}, type, index};
  return spec;
}

std::string device_error(const distribute::ClusterSpec& spec, int visible_gpus) {
  try {
    const distribute::LogicalDevice d = spec.compute_device(visible_gpus);
    return "no error: " + d.name;
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
}

TEST(ParameterServerDevices, WorkersAndTheChiefComputeOnTheFirstVisibleGpuElseTheCpu) {
  testing::LogicalGpusPerGpu one(1);
  for (const auto& [type, index] : std::vector<std::pair<std::string, int>>{{"worker", 0}, {"worker", 1}, {"chief", 0}}) {
    const distribute::ClusterSpec spec = spec_of(type, index);
    EXPECT_EQ(spec.compute_device(0), (distribute::LogicalDevice{"cpu:0", Device::cpu()})) << type << index;
    EXPECT_EQ(spec.compute_device(1), (distribute::LogicalDevice{"gpu:0", Device::cuda(0)})) << type << index;
    EXPECT_EQ(spec.compute_device(4), (distribute::LogicalDevice{"gpu:0", Device::cuda(0)})) << type << index;
  }
  // Parameter servers stay on the CPU, whatever they see or the workers are given.
  distribute::ClusterSpec ps = spec_of("ps", 0);
  ps.worker_devices = {"cuda:0"};
  ps.chief_device = "cuda:0";
  EXPECT_EQ(ps.compute_device(2), (distribute::LogicalDevice{"cpu:0", Device::cpu()}));
  // Logical GPUs: the first GPU is logical GPU 0, on cuda:0.
  testing::LogicalGpusPerGpu three(3);
  EXPECT_EQ(spec_of("worker", 1).compute_device(2), (distribute::LogicalDevice{"gpu:0", Device::cuda(0)}));
}

TEST(ParameterServerDevices, AnExplicitChoiceForEveryWorkerOrOnePerWorker) {
  testing::LogicalGpusPerGpu one(1);
  distribute::ClusterSpec spec = spec_of("worker", 1);
  spec.worker_devices = {"cpu:0"};
  EXPECT_EQ(spec.compute_device(2), (distribute::LogicalDevice{"cpu:0", Device::cpu()})) << "one name: every worker";
  spec.worker_devices = {"cuda:1", "/device:CPU:0"};
  EXPECT_EQ(spec.compute_device(2), (distribute::LogicalDevice{"cpu:0", Device::cpu()})) << "worker 1's own entry";
  spec.task_index = 0;
  EXPECT_EQ(spec.compute_device(2), (distribute::LogicalDevice{"gpu:1", Device::cuda(1)})) << "worker 0's own entry";
  spec.task_type = "chief";
  EXPECT_EQ(spec.compute_device(2), (distribute::LogicalDevice{"gpu:0", Device::cuda(0)})) << "the chief's default";
  spec.chief_device = "cpu";
  EXPECT_EQ(spec.compute_device(2), (distribute::LogicalDevice{"cpu:0", Device::cpu()}));

  const std::string cluster = R"("cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"], "ps": ["d:1"]}, "task": {"type": "worker", "index": 1})";
  const distribute::ClusterSpec one_name = distribute::ClusterSpec::from_json("{" + cluster + R"(, "worker_devices": "gpu:0"})");
  EXPECT_EQ(one_name.worker_devices, (std::vector<std::string>{"gpu:0"}));
  EXPECT_EQ(one_name.compute_device(1), (distribute::LogicalDevice{"gpu:0", Device::cuda(0)}));
  const distribute::ClusterSpec listed = distribute::ClusterSpec::from_json(
      "{" + cluster + R"(, "worker_devices": ["cuda:0", "cpu:0"], "chief_device": "cuda:1"})");
  EXPECT_EQ(listed.worker_devices, (std::vector<std::string>{"cuda:0", "cpu:0"}));
  EXPECT_EQ(listed.chief_device, "cuda:1");
  EXPECT_EQ(listed.compute_device(1), (distribute::LogicalDevice{"cpu:0", Device::cpu()}));
}

TEST(ParameterServerDevices, ABadOrMissingDeviceNamesTheDeviceAndTheTask) {
  testing::LogicalGpusPerGpu one(1);
  distribute::ClusterSpec spec = spec_of("worker", 1);
  spec.worker_devices = {"cpu:0", "cuda:1"};
  EXPECT_EQ(device_error(spec, 1).rfind("ParameterServerStrategy: worker 1 (c:1) computes on worker_devices[1]: "
                                        "unknown device 'cuda:1' (no such GPU). Available devices: cpu:0",
                                        0),
            0u)
      << device_error(spec, 1);
  EXPECT_NE(device_error(spec, 0).find("no GPU visible"), std::string::npos) << device_error(spec, 0);
  EXPECT_EQ(device_error(spec, 2), "no error: gpu:1");
  spec.worker_devices = {"tpu:0"};
  EXPECT_NE(device_error(spec, 2).find("worker 1 (c:1) computes on worker_devices: unknown device 'tpu:0'"),
            std::string::npos)
      << device_error(spec, 2);
  spec.worker_devices = {""};
  EXPECT_NE(device_error(spec, 2).find("unknown device ''"), std::string::npos) << device_error(spec, 2);
  distribute::ClusterSpec chief = spec_of("chief", 0);
  chief.chief_device = "gpu:0";
  EXPECT_NE(device_error(chief, 0).find("chief (a:1) computes on chief_device: unknown device 'gpu:0' (no such GPU)"),
            std::string::npos)
      << device_error(chief, 0);

  // A list that is neither one name nor one per worker, and keys of the wrong type.
  spec.worker_devices = {"cpu:0", "cpu:0", "cpu:0"};
  try {
    spec.validate();
    ADD_FAILURE() << "three devices for two workers were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("\"worker_devices\" names 3 devices for 2 workers"), std::string::npos) << e.what();
  }
  const std::string cluster = R"("cluster": {"chief": ["a:1"], "worker": ["b:1", "c:1"], "ps": ["d:1"]}, "task": {"type": "ps"})";
  EXPECT_NE(error_of("{" + cluster + R"(, "worker_devices": ["cpu:0", 1]})").find("key \"worker_devices\" must be"), std::string::npos);
  EXPECT_NE(error_of("{" + cluster + R"(, "worker_devices": []})").find("key \"worker_devices\" must be"), std::string::npos);
  EXPECT_NE(error_of("{" + cluster + R"(, "chief_device": ["cpu:0"]})").find("key \"chief_device\" must be"), std::string::npos);
  EXPECT_NE(error_of("{" + cluster + R"(, "worker_devices": ["cpu:0", "cpu:0", "cpu:0"]})").find("names 3 devices for 2 workers"),
            std::string::npos);
}

TEST(ParameterServerDevices, TheStrategyRefusesADeviceItsProcessDoesNotHave) {
  distribute::ClusterSpec spec = spec_of("worker", 0);
  spec.worker_devices = {"cuda:" + std::to_string(cuda_device_count())};
  try {
    distribute::ParameterServerStrategy strategy(spec);
    FAIL() << "a worker on " << spec.worker_devices[0] << " was made";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("worker 0 (b:1) computes on worker_devices: unknown device '" +
                                         spec.worker_devices[0] + "' (no such GPU)"),
              std::string::npos)
        << e.what();
  }
}

TEST(ParameterServerDevices, TheStrategyComputesOnTheChosenDevice) {
  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  distribute::ClusterSpec spec;
  spec.chief = {"127.0.0.1:" + std::to_string(free_port())};
  spec.worker = {"127.0.0.1:" + std::to_string(free_port())};
  spec.ps = {"127.0.0.1:" + std::to_string(free_port())};
  spec.task_type = "chief";
  spec.chief_device = "cpu:0";
  EXPECT_EQ(distribute::ParameterServerStrategy(spec).devices(), (std::vector<std::string>{"cpu:0"}));
  spec.chief_device.clear();
  EXPECT_EQ(distribute::ParameterServerStrategy(spec).devices(),
            (std::vector<std::string>{distribute::default_devices().front().name}));
}

TEST(ParameterServer, WithoutGrpcTheConstructorSaysSo) {
  if (distribute::grpc_available()) GTEST_SKIP() << "this build has gRPC";
  distribute::ClusterSpec spec{{"a:1"}, {"b:1"}, {"c:1"}, "chief", 0};
  try {
    distribute::ParameterServerStrategy strategy(spec);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no gRPC"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tower
