// tower train is interruptible: an interrupt ends training after the current batch with a checkpoint, and
// resuming the run directory reaches the same final weights as an uninterrupted run, bit for bit, with dropout,
// batch normalization, shuffling, random flips and a learning-rate schedule in play.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

#include "api/io/weights_file.h"
#include "tests/tools/tools_testing.h"
#include "tools/experiment/run_checkpoint.h"
#include "tools/experiment/runner.h"

extern char** environ;

namespace tower::experiment {
namespace {

namespace fs = std::filesystem;

const std::string kExperiment = R"(seed: 11
data:
  source: synthetic
  shape: [8, 8, 1]
  classes: 4
  train_examples: 150
  test_examples: 40
  validation: {fraction: 0.2}
  shuffle_buffer: 50
  preprocessing: [{type: pad, padding: 1}, {type: random_flip}, {type: random_crop, height: 8, width: 8}]
model:
  layers:
    - {type: Conv2D, filters: 4, kernel_size: 3}
    - {type: BatchNormalization}
    - {type: ReLU}
    - {type: Flatten}
    - {type: Dropout, rate: 0.3}
    - {type: Dense, units: 4, activation: softmax}
compile:
  optimizer:
    type: Adam
    learning_rate: {type: ExponentialDecay, initial_learning_rate: 0.01, decay_steps: 7, decay_rate: 0.8}
  loss: sparse_categorical_crossentropy
  metrics: [sparse_categorical_accuracy]
fit: {epochs: 3, batch_size_per_replica: 16, verbose: 0}
)";

TrainResult run(const std::string& out, std::optional<std::int64_t> interrupt_after, bool resume,
                const std::vector<std::string>& overrides = {}) {
  const Experiment e = Experiment::parse(kExperiment, "resume.yaml", overrides);
  TrainOptions o;
  o.handle_sigint = false;
  o.interrupt_after_batches = interrupt_after;
  std::ostringstream quiet;
  o.log = &quiet;
  if (resume) {
    o.resume = out;
    return train(resume_experiment(out, &e), o);
  }
  o.out = out;
  return train(e, o);
}

std::vector<Tensor> weights_of(const TrainResult& r) { return Model(r.model).get_weights(); }

// 120 training examples in batches of 16: 8 batches per epoch (the last of 8 examples), 24 in all.
TEST(Resume, InterruptedRunsResumeToTheWeightsOfAnUninterruptedRun) {
  const fs::path root = testing::fresh_dir();
  const TrainResult whole = run((root / "whole").string(), std::nullopt, false);
  ASSERT_FALSE(whole.interrupted);
  const std::vector<Tensor> expected = weights_of(whole);
  EXPECT_EQ(whole.metrics.at("steps").as_int(), 24);

  // Mid-epoch (epoch 1, batch 3), just before an epoch's short last batch, at an epoch's end, and twice in a row.
  for (const std::vector<std::int64_t>& stops : std::vector<std::vector<std::int64_t>>{{11}, {7}, {16}, {3, 10}}) {
    std::string name = "stop";
    for (std::int64_t s : stops) name += "_" + std::to_string(s);
    SCOPED_TRACE(name);
    const std::string dir = (root / name).string();
    bool first = true;
    std::int64_t done = 0;
    for (std::int64_t s : stops) {
      const TrainResult part = run(dir, s, !first);
      EXPECT_TRUE(part.interrupted);
      done += s;
      const RunState state = read_run_state(RunDirectory::open(dir).state_path());
      EXPECT_EQ(state.iterations, done);
      EXPECT_EQ(state.epoch, static_cast<int>((done - 1) / 8));
      EXPECT_EQ(state.epoch_batches, (done - 1) % 8 + 1);
      EXPECT_EQ(part.metrics.at("interrupted"), Config(true));
      EXPECT_FALSE(fs::exists(RunDirectory::open(dir).final_weights_path()));
      first = false;
    }
    const TrainResult rest = run(dir, std::nullopt, true);
    EXPECT_FALSE(rest.interrupted);
    EXPECT_EQ(rest.metrics.at("steps").as_int(), 24);
    testing::expect_identical(weights_of(rest), expected);
    // The final weights file holds them too.
    Model reloaded(rest.model);
    reloaded.load_weights(RunDirectory::open(dir).final_weights_path());
    testing::expect_identical(reloaded.get_weights(), expected);
    // The event log counts every step once per process that ran it, in order.
    std::ifstream events(RunDirectory::open(dir).events_path());
    std::string line;
    std::int64_t batches = 0, last_step = 0;
    while (std::getline(events, line)) {
      const Config event = Config::parse_json(line);
      if (event.at("event").as_string() != "batch") continue;
      ++batches;
      EXPECT_EQ(event.at("step").as_int(), last_step + 1);
      last_step = event.at("step").as_int();
    }
    EXPECT_EQ(batches, 24);
  }
  fs::remove_all(root);
}

// Under a MirroredStrategy of two CPU replicas (global batch 2 x 8): each replica's plan has its own dropout
// state (seed and steps), and the checkpoint keeps every one.
TEST(Resume, AMirroredRunResumesToTheSameWeights) {
  const fs::path root = testing::fresh_dir();
  const std::vector<std::string> mirrored = {"strategy={type: mirrored, devices: [cpu:0, cpu:1]}",
                                             "fit.batch_size_per_replica=8"};
  const TrainResult whole = run((root / "whole").string(), std::nullopt, false, mirrored);
  EXPECT_EQ(whole.metrics.at("steps").as_int(), 24);  // 120 examples in global batches of 16
  const TrainResult part = run((root / "part").string(), 13, false, mirrored);
  EXPECT_TRUE(part.interrupted);
  const TrainResult rest = run((root / "part").string(), std::nullopt, true, mirrored);
  const RunState state = read_run_state(RunDirectory::open((root / "part").string()).state_path());
  // Two replicas, global batches of 16 and a last one of 8 (4 rows each): four replica plans.
  EXPECT_EQ(state.plans.size(), 4u);
  testing::expect_identical(weights_of(rest), weights_of(whole));
  fs::remove_all(root);
}

TEST(Resume, TrainingLongerContinuesAFinishedRunAndOtherChangesAreRefused) {
  const fs::path root = testing::fresh_dir();
  const TrainResult three = run((root / "three").string(), std::nullopt, false, {"fit.epochs=3"});
  ASSERT_FALSE(run((root / "two").string(), std::nullopt, false, {"fit.epochs=2"}).interrupted);
  const TrainResult more = run((root / "two").string(), std::nullopt, true, {"fit.epochs=3"});
  testing::expect_identical(weights_of(more), weights_of(three));

  testing::expect_error_at([&] { run((root / "two").string(), std::nullopt, true, {"fit.batch_size_per_replica=8"}); },
                           "--set fit.batch_size_per_replica=8", 0, 0,
                           {"fit.batch_size_per_replica: 8 differs from 16", "config.yaml"});
  EXPECT_THROW(run((root / "two").string(), std::nullopt, false), std::runtime_error);  // exists: not overwritten
  fs::remove_all(root);
}

// The same experiment spelling out a documented default (null: the default) is the same experiment.
TEST(Resume, AFileSpellingOutADefaultResumes) {
  const fs::path root = testing::fresh_dir();
  ASSERT_FALSE(run((root / "run").string(), std::nullopt, false, {"fit.epochs=1"}).interrupted);
  const TrainResult more = run((root / "run").string(), std::nullopt, true,
                               {"fit.epochs=2", "fit.steps_per_epoch=null", "fit.class_weight=null"});
  EXPECT_EQ(more.metrics.at("epochs_completed").as_int(), 2);
  testing::expect_error_at([&] { run((root / "run").string(), std::nullopt, true, {"fit.steps_per_epoch=3"}); },
                           "--set fit.steps_per_epoch=3", 0, 0, {"fit.steps_per_epoch: 3 differs from"});
  fs::remove_all(root);
}

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Resume, ADamagedCheckpointSaysWhatToDoAndRewritesNothing) {
  const fs::path root = testing::fresh_dir();
  const fs::path dir = root / "run";
  ASSERT_FALSE(run(dir.string(), std::nullopt, false, {"fit.epochs=1"}).interrupted);
  const fs::path state = dir / "checkpoints" / "state.weights";
  const std::string bytes = file_text(state);
  std::ofstream(state, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  std::ofstream(dir / "config.yaml", std::ios::app) << "# edited\n";
  const std::string config = file_text(dir / "config.yaml"), summary = file_text(dir / "summary.txt");
  const auto config_time = fs::last_write_time(dir / "config.yaml");

  const std::string m = error_of([&] { run(dir.string(), std::nullopt, true, {"fit.epochs=2"}); });
  EXPECT_NE(m.find(state.string()), std::string::npos) << m;
  EXPECT_NE(m.find("start it again in a new directory with `tower train " + (dir / "config.yaml").string() +
                   " --out NEW_DIR`"),
            std::string::npos)
      << m;
  EXPECT_EQ(file_text(dir / "config.yaml"), config);
  EXPECT_EQ(fs::last_write_time(dir / "config.yaml"), config_time);
  EXPECT_EQ(file_text(dir / "summary.txt"), summary);
  fs::remove_all(root);
}

TEST(Resume, AnExperimentFileIsNotARunDirectory) {
  const fs::path root = testing::fresh_dir();
  fs::create_directories(root);
  const fs::path file = root / "exp.yaml";
  std::ofstream(file) << kExperiment;
  const std::string m = error_of([&] { resume_experiment(file.string(), nullptr); });
  EXPECT_EQ(m.rfind(file.string() + " is a file, not a run directory: --resume takes the directory", 0), 0u) << m;
  EXPECT_NE(m.find("to start a new run, use tower train " + file.string()), std::string::npos) << m;
  fs::remove_all(root);
}

// The real thing: `tower train` in a child process, stopped with SIGINT, resumed with --resume.
TEST(Resume, CtrlCStopsTheTowerCommandAndResumeFinishesTheRun) {
  const fs::path root = testing::fresh_dir();
  fs::create_directories(root);
  const fs::path file = root / "exp.yaml";
  std::ofstream(file) << kExperiment;
  const std::vector<std::string> longer = {"--set", "data.train_examples=3000", "--set", "fit.epochs=2"};
  // With `interrupt`, Ctrl-C comes at a moment made certain: the child stops itself while it writes its weights
  // after epoch 1 (the TOWER_TEST_STOP_IN_WRITE hook of io::write_file_atomically), gets SIGINT and continues;
  // it then stops at the end of the next batch.
  const auto tower = [&](std::vector<std::string> args, bool interrupt = false) {
    args.insert(args.begin(), TOWER_COMMAND);
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) env.push_back(*e);
    if (interrupt) env.push_back("TOWER_TEST_STOP_IN_WRITE=epoch-001.weights");
    // Everything the child needs is made before fork: between fork and exec only async-signal-safe calls.
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& v : env) envp.push_back(v.data());
    envp.push_back(nullptr);
    const int log = ::open((root / "log.txt").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    ::close(log);
    int status = 0;
    while (waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status)) {
      kill(pid, SIGINT);  // pending while stopped, handled once continued
      kill(pid, SIGCONT);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  };
  std::vector<std::string> args = {"train", file.string(), "--out", (root / "run").string()};
  args.insert(args.end(), longer.begin(), longer.end());
  ASSERT_EQ(tower(args, true), 130) << "expected an interrupted run (exit 130); log in " << root / "log.txt";
  // 2400 training examples in batches of 16: stopped after the first batch of epoch 2.
  const RunState state = read_run_state((root / "run" / "checkpoints" / "state.weights").string());
  EXPECT_EQ(state.iterations, 150 + 1);
  EXPECT_EQ(state.epoch, 1);
  EXPECT_EQ(state.epoch_batches, 1);

  args = {"train", file.string(), "--resume", (root / "run").string()};
  args.insert(args.end(), longer.begin(), longer.end());
  ASSERT_EQ(tower(args), 0);
  args = {"train", file.string(), "--out", (root / "whole").string()};
  args.insert(args.end(), longer.begin(), longer.end());
  ASSERT_EQ(tower(args), 0);

  const io::WeightsFile resumed = io::read_weights_file((root / "run" / "final.weights").string());
  const io::WeightsFile whole = io::read_weights_file((root / "whole" / "final.weights").string());
  std::vector<Tensor> a, b;
  for (const auto& t : resumed.weights) a.push_back(t.value);
  for (const auto& t : whole.weights) b.push_back(t.value);
  testing::expect_identical(a, b);
  fs::remove_all(root);
}

}  // namespace
}  // namespace tower::experiment
