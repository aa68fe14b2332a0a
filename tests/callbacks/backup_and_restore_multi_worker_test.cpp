// BackupAndRestore under MultiWorkerMirroredStrategy with real processes: BackupAndRestoreMultiWorker.* start
// `mpirun -np 2` on loopback, running this test binary's BackupAndRestoreMultiWorkerWorker.Train in each process
// (it does nothing unless TOWER_TEST_BACKUP_MPI_OUT is set), as tests/distribute/multi_worker_test.cpp does.
// Each worker trains a model with a seeded and an unseeded Dropout three times on the same batches (41 examples
// by 8: the last batch of 1 leaves worker 1 without rows): four epochs uninterrupted; two epochs with a backup
// kept; four epochs resumed from that backup by a fresh model. It writes the first and the last weights.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "distribute/replica_testing.h"
#include "tower/tower.h"

namespace tower {
namespace {

namespace fs = std::filesystem;

Model make_model(distribute::Strategy& strategy) {
  auto scope = strategy.scope();
  set_random_seed(31);
  Sequential m({InputLayer({.shape = {8, 8, 2}}), layers::Flatten(), layers::Dense({.units = 16, .activation = "relu"}),
                layers::Dropout({.rate = 0.5f, .seed = 9}), layers::Dense({.units = 8, .activation = "relu"}),
                layers::Dropout({.rate = 0.3f}), layers::Dense({.units = 4, .activation = "softmax"})});
  m.compile(optimizers::Adam(1e-2), losses::SparseCategoricalCrossentropy());
  return m;
}

data::Dataset dataset() {
  const testing::Examples e = testing::seeded_examples(41, 5);
  return data::Dataset::from_tensor_slices({e.x, e.y}).batch(8);
}

TEST(BackupAndRestoreMultiWorkerWorker, Train) {
  const char* out = std::getenv("TOWER_TEST_BACKUP_MPI_OUT");
  if (!out) GTEST_SKIP() << "runs only inside the mpirun job of BackupAndRestoreMultiWorker.*";
  distribute::MultiWorkerMirroredStrategy strategy({.timeout_seconds = 60}, std::vector<std::string>{"cpu:0"});
  const std::string dir = out, me = "worker" + std::to_string(strategy.worker_index());
  FitOptions options;
  options.verbose = 0;
  options.epochs = 4;
  Model reference = make_model(strategy);
  reference.fit(dataset(), options);
  reference.save_weights(dir + "/" + me + ".reference.weights");

  const std::string backup_dir = dir + "/backup";
  options.epochs = 2;
  options.callbacks = {std::make_shared<callbacks::BackupAndRestore>(
      backup_dir, callbacks::BackupAndRestoreOptions{.delete_checkpoint = false})};
  Model interrupted = make_model(strategy);
  interrupted.fit(dataset(), options);
  // A collective: the chief has written its backup before any worker reads it.
  interrupted.evaluate(dataset(), {.verbose = 0});

  options.epochs = 4;
  options.callbacks = {std::make_shared<callbacks::BackupAndRestore>(backup_dir)};
  Model resumed = make_model(strategy);
  const callbacks::History h = resumed.fit(dataset(), options);
  EXPECT_EQ(h.epoch(), (std::vector<int>{2, 3}));
  resumed.save_weights(dir + "/" + me + ".resumed.weights");
}

// Each worker resumes its own replicas' masks from the chief's backup: both end where the uninterrupted job ends.
TEST(BackupAndRestoreMultiWorker, EveryWorkerResumesToTheUninterruptedWeights) {
  if (!distribute::mpi_available()) GTEST_SKIP() << "this build of Tower has no MPI (install libopenmpi-dev)";
  const fs::path dir = fs::temp_directory_path() / ("tower_backup_mpi_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string exe = fs::read_symlink("/proc/self/exe").string();
  // Open MPI refuses root unless told twice; `timeout` ends a job that hangs.
  // Under AddressSanitizer the workers skip the leak check, as the MultiWorker tests' do: Open MPI's components
  // leave allocations LeakSanitizer cannot name.
  std::string asan_env;
  if (const char* asan = std::getenv("ASAN_OPTIONS"); asan && *asan)
    asan_env = std::string("-x ASAN_OPTIONS=") + asan + ":detect_leaks=0 ";
  const std::string command =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -s KILL 300 mpirun -np 2 --oversubscribe "
      "--mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo -x OMP_NUM_THREADS=1 " + asan_env +
      "-x TOWER_TEST_BACKUP_MPI_OUT=" + dir.string() + " " + exe +
      " --gtest_filter=BackupAndRestoreMultiWorkerWorker.Train > " + (dir / "mpirun.log").string() + " 2>&1";
  const int status = std::system(command.c_str());
  std::stringstream log;
  log << std::ifstream(dir / "mpirun.log").rdbuf();
  ASSERT_EQ(status, 0) << log.str();
  for (const std::string worker : {"worker0", "worker1"}) {
    const io::WeightsFile want = io::read_weights_file((dir / (worker + ".reference.weights")).string());
    const io::WeightsFile got = io::read_weights_file((dir / (worker + ".resumed.weights")).string());
    ASSERT_EQ(got.weights.size(), want.weights.size());
    for (std::size_t i = 0; i < want.weights.size(); ++i)
      EXPECT_EQ(got.weights[i].value.to_vector(), want.weights[i].value.to_vector())
          << worker << ", weight " << want.weights[i].name << ": largest relative difference "
          << testing::relative_difference(got.weights[i].value, want.weights[i].value);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tower
