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
// Without gRPC in the build they skip (saying so).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "distribute/replica_testing.h"
#include "tower/tower.h"

namespace tower {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kSeed = 4242;
constexpr Index kFashionExamples = 12000;
constexpr Index kFashionBatch = 32;
constexpr int kFashionEpochs = 5;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Model convnet() {
  set_random_seed(kSeed);
  return testing::small_convnet(false, false);
}

Model fashion_mlp() {
  set_random_seed(kSeed);
  auto x = Input({28, 28, 1});
  auto h = layers::Flatten()(x);
  h = layers::Dense({.units = 64, .activation = "relu"})(h);
  auto y = layers::Dense({.units = 10, .activation = "softmax"})(h);
  return Model(x, y);
}

optimizers::OptimizerPtr optimizer_for(const std::string& scenario) {
  if (scenario == "adam") return optimizers::Adam(1e-3);
  return optimizers::SGD(0.1);
}

data::Dataset seeded(Index count, std::uint64_t seed) {
  const testing::Examples e = testing::seeded_examples(count, seed);
  return data::Dataset::from_tensor_slices({e.x, e.y}).batch(8);
}

bool have_fashion_mnist() {
  return fs::exists(fs::path(data::fashion_mnist::default_directory) / "train-images-idx3-ubyte.gz");
}

// The first kFashionExamples training images, shuffled with `seed` and batched.
data::Dataset fashion_train(Index batch, std::uint64_t seed) {
  return data::fashion_mnist::load("train").take(kFashionExamples).cache().shuffle(kFashionExamples, seed).batch(batch);
}

data::Dataset fashion_test() { return data::fashion_mnist::load("test").batch(500); }

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
    Model m = fashion ? fashion_mlp() : convnet();
    optimizers::OptimizerPtr opt = optimizer_for(fashion ? "adam" : scenario);
    m.compile(opt, losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
    return m;
  }();
  FitOptions fit;
  fit.verbose = 0;
  fit.epochs = fashion ? kFashionEpochs : 2;
  fit.steps_per_epoch = fashion ? kFashionExamples / kFashionBatch : scenario.starts_with("kill") ? 30 : 8;
  auto batches = std::make_shared<int>(0);
  callbacks::LambdaCallbackOptions count;
  count.on_train_batch_end = [batches, victim = std::atoi(env("TOWER_TEST_PS_KILL_PID").c_str())](
                                 std::int64_t, const callbacks::Logs&) {
    if (++*batches == 5 && victim > 0) kill(victim, SIGKILL);
  };
  fit.callbacks.push_back(std::make_shared<callbacks::LambdaCallback>(count));
  // Each worker reads the whole training set in its own order (TF's per-worker dataset_fn): however the chief
  // happens to share the steps between the workers, the updates see the data Mirrored's do.
  const data::Dataset train = fashion ? fashion_train(kFashionBatch, 7 + static_cast<std::uint64_t>(strategy.task_index()))
                                      : seeded(64, 11);
  callbacks::History history;
  try {
    history = model.fit(train, fit);
  } catch (const std::exception& e) {
    std::ofstream(out + "/" + me + ".error") << e.what() << "\n";
    return;
  }
  if (!strategy.is_chief()) return;
  model.save_weights(out + "/chief.weights");
  std::ofstream report(out + "/chief.txt");
  write_history(report, history);
  report << "batches " << *batches << "\n";
  if (fashion) {
    EvaluateOptions eval;
    eval.verbose = 0;
    report << "test_accuracy " << *model.evaluate(fashion_test(), eval).get("sparse_categorical_accuracy") << "\n";
  }
}

int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

struct Process {
  std::string name;  // "ps0", "worker1", "chief0"
  pid_t pid = -1;
  int status = -1;  // exit status, or 128 + signal
};

struct ClusterRun {
  std::vector<Process> processes;
  double seconds = 0;
  bool timed_out = false;
  std::string logs;  // every process's output
  const Process& get(const std::string& name) const {
    for (const Process& p : processes)
      if (p.name == name) return p;
    throw std::out_of_range(name);
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts `workers` workers, `ps` parameter servers and the chief, each this binary's ParameterServerRole.Run,
// and waits for all (killing them after limit_seconds). `victim` ("worker1", "ps1") is the process whose pid the
// chief gets to kill at its 5th batch.
ClusterRun run_cluster(const fs::path& dir, const std::string& scenario, int workers, int ps,
                       const std::string& victim, double limit_seconds) {
  std::vector<std::string> chief{"127.0.0.1:" + std::to_string(free_port())}, worker_addresses, ps_addresses;
  for (int i = 0; i < workers; ++i) worker_addresses.push_back("127.0.0.1:" + std::to_string(free_port()));
  for (int i = 0; i < ps; ++i) ps_addresses.push_back("127.0.0.1:" + std::to_string(free_port()));
  const auto list = [](const std::vector<std::string>& a) {
    std::string s = "[";
    for (std::size_t i = 0; i < a.size(); ++i) s += (i ? ", \"" : "\"") + a[i] + "\"";
    return s + "]";
  };
  const std::string cluster = "{\"chief\": " + list(chief) + ", \"worker\": " + list(worker_addresses) +
                              ", \"ps\": " + list(ps_addresses) + "}";
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  ClusterRun run;
  const auto start = std::chrono::steady_clock::now();
  const auto spawn = [&](const std::string& type, int index, pid_t victim_pid) {
    Process p{type + std::to_string(index)};
    const std::string config =
        "{\"cluster\": " + cluster + ", \"task\": {\"type\": \"" + type + "\", \"index\": " + std::to_string(index) + "}}";
    const fs::path log = dir / (p.name + ".log");
    p.pid = fork();
    if (p.pid == 0) {
      setenv("TOWER_CONFIG", config.c_str(), 1);
      setenv("TOWER_TEST_PS_OUT", dir.c_str(), 1);
      setenv("TOWER_TEST_PS_SCENARIO", scenario.c_str(), 1);
      setenv("TOWER_TEST_PS_KILL_PID", std::to_string(victim_pid).c_str(), 1);
      setenv("OMP_NUM_THREADS", "1", 1);
      // Under AddressSanitizer the processes skip the leak check: gRPC keeps process-wide state until exit.
      if (const char* asan = std::getenv("ASAN_OPTIONS"); asan && *asan)
        setenv("ASAN_OPTIONS", (std::string(asan) + ":detect_leaks=0").c_str(), 1);
      FILE* f = std::freopen(log.c_str(), "w", stdout);
      if (f) dup2(fileno(stdout), fileno(stderr));
      const std::string filter = "--gtest_filter=ParameterServerRole.Run";
      execl(exe.c_str(), exe.c_str(), filter.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    run.processes.push_back(p);
  };
  for (int i = 0; i < ps; ++i) spawn("ps", i, 0);
  for (int i = 0; i < workers; ++i) spawn("worker", i, 0);
  pid_t victim_pid = 0;
  for (const Process& p : run.processes)
    if (p.name == victim) victim_pid = p.pid;
  spawn("chief", 0, victim_pid);
  std::size_t left = run.processes.size();
  while (left > 0) {
    for (Process& p : run.processes) {
      int status = 0;
      if (p.status >= 0 || waitpid(p.pid, &status, WNOHANG) != p.pid) continue;
      p.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      --left;
    }
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (left > 0 && run.seconds > limit_seconds) {
      run.timed_out = true;
      for (Process& p : run.processes)
        if (p.status < 0) {
          kill(p.pid, SIGKILL);
          int status = 0;
          waitpid(p.pid, &status, 0);
          p.status = 128 + SIGKILL;
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const Process& p : run.processes)
    run.logs += "---- " + p.name + " (status " + std::to_string(p.status) + ")\n" + read_file(dir / (p.name + ".log"));
  return run;
}

std::map<std::string, std::vector<double>> read_report(const fs::path& file) {
  std::map<std::string, std::vector<double>> out;
  std::ifstream in(file);
  std::string key;
  double value;
  while (in >> key >> value) out[key].push_back(value);
  return out;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tower_ps_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void expect_every_process_ended_well(const ClusterRun& run, const std::string& killed = "") {
  ASSERT_FALSE(run.timed_out) << "the cluster did not end within its limit\n" << run.logs;
  for (const Process& p : run.processes) {
    if (p.name == killed) EXPECT_EQ(p.status, 128 + SIGKILL) << p.name << "\n" << run.logs;
    else EXPECT_EQ(p.status, 0) << p.name << " failed\n" << run.logs;
  }
}

// One worker: the parameter servers apply every step's gradients before the next step pulls, so the run is
// synchronous training, step for step.
void expect_one_worker_matches_one_process(const std::string& scenario, int ps) {
  if (!distribute::grpc_available()) GTEST_SKIP() << "this build of Tower has no gRPC (install libgrpc++-dev)";
  const fs::path dir = fresh_dir(scenario);
  const ClusterRun run = run_cluster(dir, scenario, 1, ps, "", 120);
  expect_every_process_ended_well(run);
  ASSERT_TRUE(fs::exists(dir / "chief.weights")) << run.logs;
  const io::WeightsFile got = io::read_weights_file((dir / "chief.weights").string());

  Model model = convnet();
  model.compile(optimizer_for(scenario),
                losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
  FitOptions options;
  options.epochs = 2;
  options.verbose = 0;
  const callbacks::History want = model.fit(seeded(64, 11), options);
  const std::vector<VariablePtr> vars = model.weights();
  ASSERT_EQ(got.weights.size(), vars.size());
  double worst = 0;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const double d = testing::relative_difference(got.weights[i].value, vars[i]->value);
    worst = std::max(worst, d);
    EXPECT_LE(d, 1e-5) << "weight " << vars[i]->path << " differs from synchronous training";
  }
  // The initial weights moved: the comparison is not of two untrained models.
  EXPECT_GT(testing::relative_difference(got.weights[0].value, convnet().weights()[0]->value), 1e-3);
  std::cout << "[ ParameterServer ] 1 worker, " << ps << " parameter server(s), " << scenario
            << ": largest relative weight difference from synchronous training " << worst << "\n";
  const auto report = read_report(dir / "chief.txt");
  ASSERT_EQ(report.at("loss").size(), 2u);
  for (std::size_t e = 0; e < 2; ++e)
    EXPECT_NEAR(report.at("loss")[e], want["loss"][e], 1e-5 * std::fabs(want["loss"][e])) << "epoch " << e;
  EXPECT_EQ(report.at("batches")[0], 16);
  fs::remove_all(dir);
}

TEST(ParameterServer, OneWorkerEqualsSynchronousSgd) { expect_one_worker_matches_one_process("sgd", 1); }

TEST(ParameterServer, OneWorkerTwoShardsEqualsSynchronousAdam) { expect_one_worker_matches_one_process("adam", 2); }

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
    Model m = convnet();
    m.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
    return m;
  }();
  FitOptions options;
  options.verbose = 0;
  try {
    model.fit(seeded(16, 1), options);
    FAIL() << "fit without steps_per_epoch did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs steps_per_epoch"), std::string::npos) << e.what();
  }
}

TEST(ParameterServer, ClusterSpecErrorsNameTheKey) {
  const auto error_of = [](const std::string& json) {
    try {
      distribute::ClusterSpec::from_json(json);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
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
