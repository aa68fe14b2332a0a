// MultiWorkerMirroredStrategy with real processes: MultiWorker.* start `mpirun -np 2` on loopback, running this
// test binary's MultiWorkerWorker.Train in each process (that test does nothing unless TOWER_TEST_MPI_OUT is
// set). Each worker trains the small convnet with synchronized BatchNormalization on the same global batches
// (45 examples by 8 for two epochs, then 41 by 8: the last batch of 1 leaves worker 1 without rows) and writes
// its final weights, its History and its evaluation to TOWER_TEST_MPI_OUT.
//
//   TwoWorkersMatchOneProcess  both workers end with bitwise identical weights (moving statistics included),
//                              equal to one process without a strategy on the same batches (relative
//                              difference <= 1e-5), the same History and evaluation; only the chief wrote its
//                              ModelCheckpoint and CSVLogger files.
//   TwoWorkersWithTwoReplicasEachMatchOneProcess  the same with two CPU replicas per worker (4 in sync: the
//                              short batches leave a replica, then a whole worker, without rows).
//   DeadWorkerEndsTheJob       worker 1 kills itself (SIGKILL) at its third batch: mpirun must end with an error
//                              within 60 s, and worker 0 never finishes training.
//   StuckWorkerTimesOut        worker 1 stays alive but stops at its third batch: worker 0's collective times out
//                              (5 s), it fails with that error, and the job ends within 60 s.
//   ThrowingWorkerEndsTheJobAtOnce  worker 1's fit throws at its third batch (a callback): the job ends within
//                              40 s, well before the collectives' 90 s timeout, with worker 1's message.
//   CaughtStepErrorRefusesLaterCollectives  worker 1's custom-loop step throws and worker 1 catches it while worker
//                              0 waits in the step's all-reduce; worker 1's evaluate then refuses with a Tower error
//                              naming the caught one (not an MPI error), and the job ends when worker 1 exits.
//   CustomLoopMovingStatisticsAgree  a custom loop (apply_gradients inside run) with per-replica
//                              BatchNormalization: both workers end with the chief's moving statistics, which moved.
//   NoLauncherIsAClearError    in this process, which no launcher started, the strategy throws a clear error.
// Without MPI in the build the first two skip (saying so); with MPI, a missing mpirun fails them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "distribute/replica_testing.h"
#include "tower/tower.h"

namespace tower {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kSeed = 4242;

Model make_model() {
  set_random_seed(kSeed);
  return testing::small_convnet(true, true);
}

data::Dataset dataset(Index count, std::uint64_t seed) {
  const testing::Examples e = testing::seeded_examples(count, seed);
  return data::Dataset::from_tensor_slices({e.x, e.y}).batch(8);
}

void write_history(std::ostream& out, const callbacks::History& h) {
  for (const std::string& key : h.keys())
    for (double v : h[key]) out << key << " " << v << "\n";
}

// One worker of an mpirun job started by the tests below.
TEST(MultiWorkerWorker, Train) {
  const char* out = std::getenv("TOWER_TEST_MPI_OUT");
  if (!out) GTEST_SKIP() << "runs only inside the mpirun job of MultiWorker.*";
  const char* timeout = std::getenv("TOWER_TEST_MPI_TIMEOUT");
  const char* die_at = std::getenv("TOWER_TEST_MPI_DIE_AT_BATCH");
  const char* local = std::getenv("TOWER_TEST_MPI_LOCAL_REPLICAS");
  const int replicas = local ? std::atoi(local) : 1;
  std::vector<std::string> devices;
  for (int r = 0; r < replicas; ++r) devices.push_back("cpu:" + std::to_string(r));
  distribute::MultiWorkerMirroredStrategy strategy({.timeout_seconds = timeout ? std::atof(timeout) : 60.0}, devices);
  const int rank = strategy.worker_index();
  ASSERT_EQ(strategy.num_workers(), 2);
  ASSERT_EQ(strategy.num_replicas_in_sync(), 2 * replicas);
  EXPECT_EQ(strategy.is_chief(), rank == 0);
  Model model = [&] {
    auto scope = strategy.scope();
    Model m = make_model();
    m.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(), {metrics::SparseCategoricalAccuracy()});
    return m;
  }();
  const std::string dir = out, me = "worker" + std::to_string(rank);
  FitOptions options;
  options.epochs = 2;
  options.verbose = 0;
  options.callbacks.push_back(std::make_shared<callbacks::ModelCheckpoint>(dir + "/" + me + ".ckpt.weights"));
  options.callbacks.push_back(std::make_shared<callbacks::CSVLogger>(dir + "/" + me + ".log.csv"));
  const char* hang_at = std::getenv("TOWER_TEST_MPI_HANG_AT_BATCH");
  const char* throw_at = std::getenv("TOWER_TEST_MPI_THROW_AT_BATCH");
  if ((die_at || hang_at || throw_at) && rank == 1) {
    callbacks::LambdaCallbackOptions fail;
    fail.on_train_batch_begin = [die = die_at != nullptr, thrown = throw_at != nullptr,
                                 at = std::atoi(die_at ? die_at : hang_at ? hang_at : throw_at)](
                                    std::int64_t batch, const callbacks::Logs&) {
      if (batch + 1 != at) return;
      if (die) raise(SIGKILL);
      if (thrown) throw std::runtime_error("worker 1 fails at its batch " + std::to_string(at) + " on purpose");
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // alive, but never joins the step
    };
    options.callbacks.push_back(std::make_shared<callbacks::LambdaCallback>(fail));
  }
  const callbacks::History first = model.fit(dataset(45, 11), options);
  options.epochs = 1;
  options.callbacks.clear();
  const callbacks::History second = model.fit(dataset(41, 12), options);
  EvaluateOptions eval;
  eval.verbose = 0;
  const callbacks::Logs evaluation = model.evaluate(dataset(45, 11), eval);
  model.save_weights(dir + "/" + me + ".final.weights");
  std::ofstream report(dir + "/" + me + ".txt");
  write_history(report, first);
  write_history(report, second);
  for (const auto& [key, value] : evaluation.entries()) report << "eval_" << key << " " << value << "\n";
}

// A custom loop's step, apply_gradients inside run, on both workers of the mpirun job of
// MultiWorker.CaughtStepErrorRefusesLaterCollectives (worker 1's step throws) and
// MultiWorker.CustomLoopMovingStatisticsAgree (TOWER_TEST_MPI_STEPS steps; each worker writes its moving
// statistics).
TEST(MultiWorkerWorker, CustomLoop) {
  const char* out = std::getenv("TOWER_TEST_MPI_OUT");
  if (!out) GTEST_SKIP() << "runs only inside the mpirun job of MultiWorker.*";
  const char* timeout = std::getenv("TOWER_TEST_MPI_TIMEOUT");
  const bool fail = std::getenv("TOWER_TEST_MPI_STEP_THROWS") != nullptr;
  distribute::MultiWorkerMirroredStrategy strategy({.timeout_seconds = timeout ? std::atof(timeout) : 60.0});
  const int rank = strategy.worker_index();
  Model model = [&] {
    auto scope = strategy.scope();
    set_random_seed(kSeed);
    Model m = testing::small_convnet(true, false);
    m.compile(optimizers::SGD(0.1), losses::SparseCategoricalCrossentropy());
    return m;
  }();
  optimizers::OptimizerPtr optimizer = optimizers::SGD(0.1);
  losses::LossPtr loss_fn = losses::SparseCategoricalCrossentropy();
  const auto step = [&](distribute::ReplicaStep& replica) {
    if (fail && rank == 1) throw std::runtime_error("worker 1's step fails on purpose");
    GradientTape tape;
    Tensor probs = replica.call(tape, replica.batch()[0]);
    Tensor loss = tape.loss(loss_fn, replica.batch()[1], probs, {.global_batch_size = replica.global_batch_size()});
    const std::vector<VariablePtr>& vars = replica.trainable_weights();
    optimizer->apply_gradients(optimizers::zip(tape.gradient(loss, vars), vars));
  };
  const std::string dir = out, me = "worker" + std::to_string(rank);
  auto it = distribute::distribute_dataset(strategy, dataset(45, 11)).make_iterator();
  if (fail) {
    try {
      distribute::run(strategy, model, *it.next(), step);
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("fails on purpose"), std::string::npos) << e.what();
    }
    EvaluateOptions eval;
    eval.verbose = 0;
    try {
      model.evaluate(dataset(45, 11), eval);
      std::ofstream(dir + "/" + me + ".refused.txt") << "no error";
    } catch (const std::exception& e) {
      std::ofstream(dir + "/" + me + ".refused.txt") << e.what();
    }
    return;
  }
  while (auto batch = it.next()) distribute::run(strategy, model, *batch, step);
  std::ofstream report(dir + "/" + me + ".statistics.txt");
  for (const VariablePtr& v : model.impl().non_trainable_weights())
    for (float x : v->value.to_vector()) report << v->path << " " << x << "\n";
}

std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  return "";
}

struct JobResult {
  int status = -1;  // exit status, or 128 + signal
  double seconds = 0;
  bool timed_out = false;
  std::string output;
};

// Runs `mpirun -np 2` on this binary's MultiWorkerWorker.<worker_test>, killing the whole job after `limit_seconds`.
JobResult run_job(const fs::path& dir, const std::vector<std::string>& extra_env, double limit_seconds,
                  const std::string& worker_test = "Train") {
  const std::string mpirun = find_program("mpirun");
  EXPECT_FALSE(mpirun.empty()) << "Tower was built with MPI, but mpirun is not on the PATH (Debian: openmpi-bin)";
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args{mpirun, "-np", "2", "--oversubscribe", "--mca", "btl", "self,tcp", "--mca",
                                "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
                                "-x", "TOWER_TEST_MPI_OUT=" + dir.string(), "-x", "OMP_NUM_THREADS=1"};
  for (const std::string& e : extra_env) {
    args.push_back("-x");
    args.push_back(e);
  }
  // Under AddressSanitizer (make test-sanitize) the workers skip the leak check: Open MPI's components, loaded
  // by MPI_Init and unloaded by MPI_Finalize, leave allocations LeakSanitizer cannot even name. The same
  // training code is leak-checked in one process by the MirroredStrategy tests.
  if (const char* asan = std::getenv("ASAN_OPTIONS"); asan && *asan)
    args.insert(args.end(), {"-x", std::string("ASAN_OPTIONS=") + asan + ":detect_leaks=0"});
  for (const std::string& a : {exe, "--gtest_filter=MultiWorkerWorker." + worker_test}) args.push_back(a);
  const fs::path log = dir / "mpirun.log";
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (geteuid() == 0) {  // Open MPI refuses root unless told twice
      setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
      setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (f) dup2(fileno(stdout), fileno(stderr));
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  JobResult result;
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (done == pid) break;
    if (result.seconds > limit_seconds) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  result.output = ss.str();
  return result;
}

std::map<std::string, double> read_report(const fs::path& file) {
  std::map<std::string, double> out;
  std::ifstream in(file);
  std::string key;
  double value;
  std::map<std::string, int> seen;
  while (in >> key >> value) out[key + "#" + std::to_string(seen[key]++)] = value;
  return out;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tower_mpi_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Runs the training job with `local_replicas` replicas per worker and compares it with one process.
void expect_job_matches_one_process(int local_replicas) {
  const fs::path dir = fresh_dir("match" + std::to_string(local_replicas));
  const JobResult job =
      run_job(dir, {"TOWER_TEST_MPI_LOCAL_REPLICAS=" + std::to_string(local_replicas)}, 300);
  ASSERT_FALSE(job.timed_out) << job.output;
  ASSERT_EQ(job.status, 0) << job.output;
  const io::WeightsFile w0 = io::read_weights_file((dir / "worker0.final.weights").string());
  const io::WeightsFile w1 = io::read_weights_file((dir / "worker1.final.weights").string());

  // One process, no strategy, the same batches.
  Model model = make_model();
  model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                {metrics::SparseCategoricalAccuracy()});
  FitOptions options;
  options.epochs = 2;
  options.verbose = 0;
  const callbacks::History first = model.fit(dataset(45, 11), options);
  options.epochs = 1;
  const callbacks::History second = model.fit(dataset(41, 12), options);
  EvaluateOptions eval;
  eval.verbose = 0;
  const callbacks::Logs evaluation = model.evaluate(dataset(45, 11), eval);

  const std::vector<VariablePtr> vars = model.weights();
  ASSERT_EQ(w0.weights.size(), vars.size());
  ASSERT_EQ(w1.weights.size(), vars.size());
  double worst = 0;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    EXPECT_EQ(w0.weights[i].value.to_vector(), w1.weights[i].value.to_vector())
        << "workers differ in weight " << vars[i]->path;
    const double d = testing::relative_difference(w0.weights[i].value, vars[i]->value);
    worst = std::max(worst, d);
    EXPECT_LE(d, 1e-5) << "weight " << vars[i]->path << " differs from the single-process run";
  }
  std::cout << "[ MultiWorker ] 2 workers x " << local_replicas
            << " replicas vs one process: largest relative weight difference " << worst << "\n";

  {
    std::ofstream single(dir / "single.txt");
    write_history(single, first);
    write_history(single, second);
    for (const auto& [key, value] : evaluation.entries()) single << "eval_" << key << " " << value << "\n";
  }
  const auto r0 = read_report(dir / "worker0.txt"), r1 = read_report(dir / "worker1.txt");
  const auto want = read_report(dir / "single.txt");
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(r0, r1) << "the workers report different losses or metrics";
  for (const auto& [key, value] : want) {
    ASSERT_TRUE(r0.count(key)) << key;
    EXPECT_LE(std::fabs(r0.at(key) - value), 1e-5 * std::fabs(value)) << key;
  }
  // Only the chief writes checkpoints and logs.
  EXPECT_TRUE(fs::exists(dir / "worker0.ckpt.weights"));
  EXPECT_TRUE(fs::exists(dir / "worker0.log.csv"));
  EXPECT_FALSE(fs::exists(dir / "worker1.ckpt.weights"));
  EXPECT_FALSE(fs::exists(dir / "worker1.log.csv"));
  fs::remove_all(dir);
}

TEST(MultiWorker, TwoWorkersMatchOneProcess) {
  if (!distribute::mpi_available()) GTEST_SKIP() << "this build of Tower has no MPI (install libopenmpi-dev)";
  expect_job_matches_one_process(1);
}

// Two replicas per worker: replicas sum on their worker, then the workers sum over MPI (SyncBN too).
TEST(MultiWorker, TwoWorkersWithTwoReplicasEachMatchOneProcess) {
  if (!distribute::mpi_available()) GTEST_SKIP() << "this build of Tower has no MPI (install libopenmpi-dev)";
  expect_job_matches_one_process(2);
}

TEST(MultiWorker, DeadWorkerEndsTheJob) {
  if (!distribute::mpi_available()) GTEST_SKIP() << "this build of Tower has no MPI (install libopenmpi-dev)";
  const fs::path dir = fresh_dir("dead");
  const JobResult job = run_job(dir, {"TOWER_TEST_MPI_DIE_AT_BATCH=3", "TOWER_TEST_MPI_TIMEOUT=20"}, 120);
  EXPECT_FALSE(job.timed_out) << "the job hung after a worker died:\n" << job.output;
  EXPECT_NE(job.status, 0) << job.output;
  EXPECT_LT(job.seconds, 60) << job.output;
  EXPECT_FALSE(fs::exists(dir / "worker0.final.weights")) << "worker 0 finished although worker 1 died";
  std::cout << "[ MultiWorker ] a killed worker ended the job in " << job.seconds << " s (exit status " << job.status
            << ")\n";
  fs::remove_all(dir);
}

TEST(MultiWorker, StuckWorkerTimesOut) {
  if (!distribute::mpi_available()) GTEST_SKIP() << "this build of Tower has no MPI (install libopenmpi-dev)";
  const fs::path dir = fresh_dir("stuck");
  const JobResult job = run_job(dir, {"TOWER_TEST_MPI_HANG_AT_BATCH=3", "TOWER_TEST_MPI_TIMEOUT=5"}, 120);
  EXPECT_FALSE(job.timed_out) << "the job hung although a collective timed out:\n" << job.output;
  EXPECT_NE(job.status, 0) << job.output;
  EXPECT_LT(job.seconds, 60) << job.output;
  EXPECT_NE(job.output.find("did not complete within 5"), std::string::npos) << job.output;
  EXPECT_FALSE(fs::exists(dir / "worker0.final.weights"));
  std::cout << "[ MultiWorker ] a stuck worker ended the job in " << job.seconds << " s (exit status " << job.status
            << ")\n";
  fs::remove_all(dir);
}

// An exception leaving fit on one worker ends the job at once, with that worker's message, instead of leaving the
// other worker waiting in a collective for the whole timeout.
TEST(MultiWorker, ThrowingWorkerEndsTheJobAtOnce) {
  if (!distribute::mpi_available()) GTEST_SKIP() << "this build of Tower has no MPI (install libopenmpi-dev)";
  const fs::path dir = fresh_dir("thrown");
  const JobResult job = run_job(dir, {"TOWER_TEST_MPI_THROW_AT_BATCH=3", "TOWER_TEST_MPI_TIMEOUT=90"}, 150);
  EXPECT_FALSE(job.timed_out) << job.output;
  EXPECT_NE(job.status, 0) << job.output;
  EXPECT_LT(job.seconds, 40) << "the job waited for the collectives' timeout:\n" << job.output;
  EXPECT_NE(job.output.find("worker 1 fails at its batch 3 on purpose"), std::string::npos) << job.output;
  EXPECT_FALSE(fs::exists(dir / "worker0.final.weights"));
  std::cout << "[ MultiWorker ] a worker whose fit threw ended the job in " << job.seconds << " s (exit status "
            << job.status << ")\n";
  fs::remove_all(dir);
}

// A worker that caught an error from a step the other worker is still in, and goes on, is out of step: its next
// collective refuses with a Tower error naming the caught one, and its exit ends the job.
TEST(MultiWorker, CaughtStepErrorRefusesLaterCollectives) {
  if (!distribute::mpi_available()) GTEST_SKIP() << "this build of Tower has no MPI (install libopenmpi-dev)";
  const fs::path dir = fresh_dir("caught");
  const JobResult job =
      run_job(dir, {"TOWER_TEST_MPI_STEP_THROWS=1", "TOWER_TEST_MPI_TIMEOUT=60"}, 150, "CustomLoop");
  EXPECT_FALSE(job.timed_out) << job.output;
  EXPECT_LT(job.seconds, 40) << job.output;
  std::ifstream in(dir / "worker1.refused.txt");
  std::stringstream refused;
  refused << in.rdbuf();
  const std::string m = refused.str();
  EXPECT_NE(m.find("out of step"), std::string::npos) << m << "\n" << job.output;
  EXPECT_NE(m.find("worker 1's step fails on purpose"), std::string::npos) << m;
  EXPECT_EQ(m.find("MPI_ERR"), std::string::npos) << m;
  fs::remove_all(dir);
}

// distribute::run with apply_gradients inside: after every step the workers take the chief's moving statistics,
// as fit's steps do.
TEST(MultiWorker, CustomLoopMovingStatisticsAgree) {
  if (!distribute::mpi_available()) GTEST_SKIP() << "this build of Tower has no MPI (install libopenmpi-dev)";
  const fs::path dir = fresh_dir("custom");
  const JobResult job = run_job(dir, {"TOWER_TEST_MPI_TIMEOUT=60"}, 120, "CustomLoop");
  ASSERT_FALSE(job.timed_out) << job.output;
  ASSERT_EQ(job.status, 0) << job.output;
  const auto s0 = read_report(dir / "worker0.statistics.txt"), s1 = read_report(dir / "worker1.statistics.txt");
  ASSERT_FALSE(s0.empty());
  EXPECT_EQ(s0, s1) << "the workers hold different moving statistics";
  double largest = 0;
  for (const auto& [key, value] : s0)
    if (key.find("moving_mean") != std::string::npos) largest = std::max(largest, std::fabs(value));
  EXPECT_GT(largest, 1e-5) << "the moving means never moved";
  fs::remove_all(dir);
}

TEST(MultiWorker, NoLauncherIsAClearError) {
  ASSERT_EQ(std::getenv("OMPI_COMM_WORLD_SIZE"), nullptr);
  try {
    distribute::MultiWorkerMirroredStrategy strategy;
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    if (distribute::mpi_available()) {
      EXPECT_NE(m.find("MultiWorkerMirroredStrategy: this process was not started by an MPI launcher"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("mpirun -np 2"), std::string::npos) << m;
    } else {
      EXPECT_NE(m.find("MultiWorkerMirroredStrategy: this build of Tower has no MPI support"), std::string::npos) << m;
    }
  }
}

}  // namespace
}  // namespace tower
