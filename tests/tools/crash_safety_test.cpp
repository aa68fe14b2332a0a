// tower train survives SIGKILL at any moment. Each trial runs the `tower` command as a child process and kills
// it (SIGKILL) at a random time, or half-way through a random file write (the TOWER_TEST_STOP_IN_WRITE hook of
// io::write_file_atomically stops the child there, so the kill lands in the write for certain), sometimes
// kills the resumed run too, then resumes with --resume until the run finishes. After every kill no file of
// the run directory may be damaged; a directory with a complete checkpoint must resume from it (not start
// over); one without must refuse --resume with a clear error. Every trial must end with final weights
// bit-identical to an uninterrupted run's. The kill times come from a seed printed in the output
// (TOWER_CRASH_SEED=N repeats a run).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "api/io/weights_file.h"
#include "tests/tools/tools_testing.h"
#include "tools/experiment/run_checkpoint.h"

extern char** environ;

namespace tower::experiment {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// 96 training examples in batches of 16: 6 batches per epoch, 5 epochs, 30 steps. Dropout, batch
// normalization, shuffling and random flips make the weights depend on every piece of the saved state.
const std::string kExperiment = R"(seed: 11
data:
  source: synthetic
  shape: [8, 8, 1]
  classes: 4
  train_examples: 96
  test_examples: 16
  shuffle_buffer: 96
  preprocessing: [{type: random_flip}]
model:
  layers:
    - {type: Conv2D, filters: 4, kernel_size: 3}
    - {type: BatchNormalization}
    - {type: ReLU}
    - {type: Flatten}
    - {type: Dropout, rate: 0.3}
    - {type: Dense, units: 4, activation: softmax}
compile:
  optimizer: {type: Adam, learning_rate: 0.01}
  loss: sparse_categorical_crossentropy
  metrics: [sparse_categorical_accuracy]
fit: {epochs: 5, batch_size_per_replica: 16, verbose: 0}
)";
constexpr int kEpochs = 5;
constexpr std::int64_t kSteps = 30;

// When a run is killed: never, at a time after its start, or at its n-th stop in a write of a file whose path
// ends in `suffix` ("*": any file).
struct KillPlan {
  enum Kind { none, at_time, in_write } kind = none;
  double seconds = 0;
  int nth_write = 0;
  std::string suffix;
};

struct RunResult {
  pid_t pid = 0;
  bool killed = false;
  int exit_status = -1;           // when not killed
  std::string write_target;       // the file being written when killed in a write
  std::string log;                // stdout and stderr
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// The temporary file of an atomic write by process `pid` under `dir`, empty when there is none.
std::string temporary_of(const fs::path& dir, pid_t pid) {
  std::error_code ec;
  const std::string tag = ".tmp-" + std::to_string(pid);
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    const std::string p = e.path().string();
    if (p.size() > tag.size() && p.compare(p.size() - tag.size(), tag.size(), tag) == 0) return p;
  }
  return "";
}

// Runs `tower args...` (OMP_NUM_THREADS=1) and kills it as `plan` says.
RunResult run_tower(std::vector<std::string> args, const KillPlan& plan, const fs::path& run_dir,
                    const fs::path& log_path) {
  args.insert(args.begin(), TOWER_COMMAND);
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    if (v.rfind("OMP_NUM_THREADS=", 0) != 0 && v.rfind("TOWER_TEST_STOP_IN_WRITE=", 0) != 0) env.push_back(v);
  }
  env.push_back("OMP_NUM_THREADS=1");
  if (plan.kind == KillPlan::in_write) env.push_back("TOWER_TEST_STOP_IN_WRITE=" + plan.suffix);
  // Everything the child needs is made before fork: between fork and exec only async-signal-safe calls.
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& v : env) envp.push_back(v.data());
  envp.push_back(nullptr);
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const auto started = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(log);
  RunResult r;
  r.pid = pid;
  int status = 0;
  int stops = 0;
  for (;;) {
    const int options = plan.kind == KillPlan::at_time ? WNOHANG | WUNTRACED : WUNTRACED;
    const pid_t got = ::waitpid(pid, &status, options);
    if (got == pid && WIFSTOPPED(status)) {
      if (++stops < plan.nth_write) {
        ::kill(pid, SIGCONT);
        continue;
      }
      r.write_target = temporary_of(run_dir, pid);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.killed = true;
      break;
    }
    if (got == pid) {
      r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::duration<double>(Clock::now() - started).count() >= plan.seconds) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      // Killed, unless it had exited just before.
      r.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
      if (!r.killed) r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  r.log = read_text(log_path);
  return r;
}

std::vector<Tensor> final_weights(const fs::path& run) {
  std::vector<Tensor> out;
  for (const auto& t : io::read_weights_file((run / "final.weights").string()).weights) out.push_back(t.value);
  return out;
}

// Every weights file the run directory holds reads back whole (no truncated or corrupted file, ever); returns
// the complete checkpoint's training state when there is one.
std::optional<RunState> check_directory(const fs::path& run) {
  std::optional<RunState> state;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(run, ec)) {
    if (e.path().extension() != ".weights") continue;
    EXPECT_NO_THROW(io::read_weights_file(e.path().string())) << e.path();
  }
  const fs::path state_path = run / "checkpoints" / "state.weights";
  if (fs::exists(state_path)) {
    try {
      state = read_run_state(state_path.string());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "damaged checkpoint: " << e.what();
    }
  }
  return state;
}

// The steps of the "train_begin" events of events.jsonl after its first `skip` lines.
std::vector<std::int64_t> train_begin_steps(const fs::path& run, std::size_t skip) {
  std::vector<std::int64_t> steps;
  std::ifstream in(run / "events.jsonl");
  std::string line;
  for (std::size_t i = 0; std::getline(in, line); ++i) {
    if (i < skip || line.find("\"train_begin\"") == std::string::npos) continue;
    steps.push_back(Config::parse_json(line).at("step").as_int());
  }
  return steps;
}

std::size_t line_count(const fs::path& p) {
  std::ifstream in(p);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST(CrashSafety, SigkillAtRandomMomentsThenResumeReachesTheWeightsOfAnUninterruptedRun) {
  std::uint64_t seed = std::random_device{}();
  if (const char* s = std::getenv("TOWER_CRASH_SEED")) seed = std::stoull(s);
  std::cout << "crash-safety seed: " << seed << " (TOWER_CRASH_SEED=" << seed << " repeats these kill times)\n";
  std::mt19937_64 rng(seed);
  const auto uniform = [&](double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); };
  const auto pick = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };

  const fs::path root = testing::fresh_dir();
  fs::create_directories(root);
  const std::string file = (root / "exp.yaml").string();
  std::ofstream(file) << kExperiment;
  const auto started = Clock::now();

  const fs::path whole = root / "whole";
  const RunResult ref = run_tower({"train", file, "--out", whole.string()}, {}, whole, root / "whole.log");
  ASSERT_EQ(ref.exit_status, 0) << ref.log;
  const double run_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  const std::vector<Tensor> expected = final_weights(whole);

  constexpr int kTrials = 24;
  int kills = 0, kills_in_write = 0, kills_in_checkpoint_write = 0, time_kills_in_write = 0, resumed = 0,
      refused = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const fs::path run = root / ("trial" + std::to_string(trial));
    // The first kill of a trial: half of them in a write (every other one in a checkpoint write, the n-th of
    // the 5 state.weights writes, n >= 2 so that a complete checkpoint exists; else the n-th of the run's 14
    // writes), half at a random time of the run.
    std::vector<KillPlan> plans;
    if (trial % 2 == 0)
      plans.push_back(trial % 4 == 0 ? KillPlan{KillPlan::in_write, 0, pick(2, kEpochs), "state.weights"}
                                     : KillPlan{KillPlan::in_write, 0, pick(1, 2 * kEpochs + 4), "*"});
    else
      plans.push_back({KillPlan::at_time, uniform(0, run_seconds)});
    // Half of the trials kill the next run too, at a random time.
    if (pick(0, 1)) plans.push_back({KillPlan::at_time, uniform(0, run_seconds)});
    plans.push_back({});

    std::ostringstream story;
    int retimed = 0;
    for (std::size_t attempt = 0; attempt < plans.size(); ++attempt) {
      const KillPlan plan = plans[attempt];
      const fs::path log = root / ("trial" + std::to_string(trial) + "-" + std::to_string(attempt) + ".log");
      const std::optional<RunState> before = fs::exists(run) ? check_directory(run) : std::nullopt;
      RunResult r;
      std::size_t events_before = 0;
      if (before) {
        // A complete checkpoint: --resume must continue from it.
        events_before = line_count(run / "events.jsonl");
        r = run_tower({"train", "--resume", run.string()}, plan, run, log);
        story << " resume@" << before->iterations;
        ++resumed;
      } else {
        if (fs::exists(run)) {
          // Killed before its first checkpoint: --resume must say so, not start over by itself.
          const RunResult refusal = run_tower({"train", "--resume", run.string()}, {}, run, log);
          EXPECT_EQ(refusal.exit_status, 1) << refusal.log;
          EXPECT_TRUE(refusal.log.find("no checkpoint to resume from") != std::string::npos ||
                      refusal.log.find("it has no config.yaml") != std::string::npos)
              << refusal.log;
          ++refused;
          fs::remove_all(run);
          story << " refused";
        }
        r = run_tower({"train", file, "--out", run.string()}, plan, run, log);
        story << " fresh";
      }
      if (!r.killed) {
        ASSERT_EQ(r.exit_status, 0) << "trial " << trial << ":" << story.str() << "\n" << r.log;
        if (attempt == 0 && plan.kind == KillPlan::at_time && retimed++ < 8) {
          // Finished before its kill time (a faster run than the reference): again, killed earlier.
          story << " (done before " << static_cast<int>(plan.seconds * 1000) << "ms)";
          plans[0].seconds /= 2;
          fs::remove_all(run);
          --attempt;
          continue;
        }
        // Resumed, not started over: the resumed fit began at the checkpoint's step.
        if (before && !(before->epoch_complete() && before->epoch + 1 >= kEpochs)) {
          const std::vector<std::int64_t> begins = train_begin_steps(run, events_before);
          ASSERT_FALSE(begins.empty()) << story.str();
          EXPECT_EQ(begins.front(), before->iterations) << story.str();
        }
        break;
      }
      ++kills;
      if (plan.kind == KillPlan::in_write) {
        ASSERT_FALSE(r.write_target.empty()) << "trial " << trial << ": stopped in a write without a temporary file";
        ++kills_in_write;
        story << " killed-writing:" << fs::path(r.write_target).filename().string();
        if (r.write_target.find("state.weights.tmp-") != std::string::npos) ++kills_in_checkpoint_write;
      } else {
        story << " killed@" << static_cast<int>(plan.seconds * 1000) << "ms";
        if (fs::exists(run) && !temporary_of(run, r.pid).empty()) ++time_kills_in_write;
      }
      ASSERT_NE(attempt + 1, plans.size()) << "the last run of a trial is never killed";
      if (fs::exists(run)) check_directory(run);
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + ":" + story.str());
    testing::expect_identical(final_weights(run), expected);
    const Config metrics = Config::parse_json(read_text(run / "metrics.json"));
    EXPECT_EQ(metrics.at("steps").as_int(), kSteps);
    for (const auto& e : fs::recursive_directory_iterator(run))
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
    std::cout << "trial " << trial << ":" << story.str() << "\n";
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::cout << kTrials << " trials, " << kills << " kills (" << kills_in_write << " during a file write, "
            << kills_in_checkpoint_write << " during a checkpoint write; " << time_kills_in_write
            << " timed kills left a temporary file), " << resumed << " resumes from a checkpoint, " << refused
            << " refusals to resume without one; all reached the uninterrupted run's weights bit for bit ("
            << seconds << " s, an uninterrupted run takes " << run_seconds << " s)\n";
  EXPECT_GE(kills, kTrials);  // every trial's first run is killed
  EXPECT_GE(kills_in_checkpoint_write, kTrials / 4);  // every fourth trial kills in a state.weights write
  EXPECT_GE(resumed, kTrials / 4);  // at least the trials killed in a checkpoint write after the first
  fs::remove_all(root);
}

// The files a finished run leaves under checkpoints/ (names and bytes) and final.weights.
std::map<std::string, std::string> checkpoint_files(const fs::path& run) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(run / "checkpoints"))
    if (e.path().filename() != "state.weights") out[e.path().filename().string()] = read_text(e.path());
  out["final.weights"] = read_text(run / "final.weights");
  return out;
}

// Resumes `run` (or starts it afresh when it has no checkpoint) until it finishes.
void finish(const fs::path& run, const std::string& file, const fs::path& log) {
  const bool resumable = fs::exists(run / "checkpoints" / "state.weights");
  if (!resumable) fs::remove_all(run);
  const RunResult r = resumable ? run_tower({"train", "--resume", run.string()}, {}, run, log)
                                : run_tower({"train", file, "--out", run.string()}, {}, run, log);
  ASSERT_EQ(r.exit_status, 0) << r.log;
}

// Every file write of a run in turn: the n-th write is killed half-way for n = 1, 2, ... until a run finishes
// without reaching it. Each resumed run must end with the uninterrupted run's files: every epoch's weights file
// (none lost, none different), the final weights and history.csv, byte for byte, and no temporary file. Returns the number of
// runs killed.
int kill_in_each_write(const std::string& experiment, const std::string& name) {
  const fs::path root = testing::fresh_dir() / name;
  fs::create_directories(root);
  const std::string file = (root / "exp.yaml").string();
  std::ofstream(file) << experiment;
  const fs::path whole = root / "whole";
  const RunResult ref = run_tower({"train", file, "--out", whole.string()}, {}, whole, root / "whole.log");
  EXPECT_EQ(ref.exit_status, 0) << ref.log;
  const std::map<std::string, std::string> expected = checkpoint_files(whole);
  const std::string history = read_text(whole / "history.csv");
  int kills = 0;
  for (int n = 1;; ++n) {
    const fs::path run = root / ("write" + std::to_string(n));
    const RunResult r = run_tower({"train", file, "--out", run.string()}, {KillPlan::in_write, 0, n, "*"}, run,
                                  root / ("write" + std::to_string(n) + ".log"));
    if (!r.killed) {
      EXPECT_EQ(r.exit_status, 0) << r.log;
      break;
    }
    ++kills;
    SCOPED_TRACE(name + ": killed in write " + std::to_string(n) + ": " + r.write_target);
    finish(run, file, root / ("write" + std::to_string(n) + "-resumed.log"));
    const std::map<std::string, std::string> got = checkpoint_files(run);
    for (const auto& [file_name, bytes] : expected) {
      EXPECT_TRUE(got.count(file_name)) << file_name << " is missing";
      if (got.count(file_name)) EXPECT_TRUE(got.at(file_name) == bytes) << file_name << " differs";
    }
    EXPECT_EQ(got.size(), expected.size());
    EXPECT_TRUE(read_text(run / "history.csv") == history) << "history.csv differs:\n" << read_text(run / "history.csv");
    for (const auto& e : fs::recursive_directory_iterator(run))
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
  }
  std::cout << name << ": " << kills << " runs, each killed in its n-th file write, resumed to the uninterrupted "
            << "run's files\n";
  fs::remove_all(root.parent_path());
  return kills;
}

TEST(CrashSafety, AKillInEachWriteInTurnResumesToTheFilesOfAnUninterruptedRun) {
  // config, summary, an epoch file and the state per epoch, final, metrics
  EXPECT_GE(kill_in_each_write(kExperiment, "plain"), 2 * kEpochs + 4);
}

// The same with callbacks that remember something from epoch to epoch, and a BackupAndRestore whose backup is
// written at each epoch's end before the run's state: the run's state is the one that counts on resume. No epoch
// is an improvement by min_delta 10, so ReduceLROnPlateau halves the rate after epoch 3 (its wait counts across
// a resume) and EarlyStopping stops after epoch 4 and restores epoch 1's weights (its best weights and wait are
// in the state too).
TEST(CrashSafety, AKillInEachWriteInTurnWithStatefulCallbacksResumesToTheSameFiles) {
  const std::string experiment = kExperiment + R"(callbacks:
  - {type: EarlyStopping, monitor: loss, patience: 3, min_delta: 10, restore_best_weights: true}
  - {type: ReduceLROnPlateau, monitor: loss, factor: 0.5, patience: 2, min_delta: 10, cooldown: 1}
  - {type: BackupAndRestore, backup_dir: backup}
)";
  // config, summary, per epoch a backup, an epoch file and the state (4 epochs), final, metrics
  EXPECT_GE(kill_in_each_write(experiment, "callbacks"), 3 * 4 + 4);
}

}  // namespace
}  // namespace tower::experiment
