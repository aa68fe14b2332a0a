// A C++ fit with BackupAndRestore survives SIGKILL in any of its writes: the program below (this test binary run
// as a child, BackupAndRestoreResume.Child) trains a model with Dropout, a reshuffled dataset, EarlyStopping and
// ReduceLROnPlateau, and is killed half-way through its n-th file write (the TOWER_TEST_STOP_IN_WRITE hook of
// io::write_file_atomically stops it there) for n = 1, 2, ...; running it again resumes from the backup. Every
// resumed run must end with the final weights of an uninterrupted one, bit for bit.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "api/callbacks/backup_and_restore.h"
#include "api/callbacks/early_stopping.h"
#include "api/callbacks/reduce_lr_on_plateau.h"
#include "api/io/weights_file.h"
#include "testing/layer_test.h"

extern char** environ;

namespace tower::callbacks {
namespace {

namespace fs = std::filesystem;

// The program: 6 epochs of 5 batches over 40 reshuffled examples. No epoch improves the loss by min_delta 10,
// so ReduceLROnPlateau halves the rate after epoch 3 and EarlyStopping ends the fit after epoch 5: the weights
// depend on every piece of the backup (the plans' Dropout generators, the shuffle's pass, both callbacks' states).
void train(const fs::path& dir) {
  set_random_seed(5);
  Sequential model({InputLayer({.shape = {6}}), layers::Dense({.units = 8, .activation = "relu"}),
                    layers::Dropout({.rate = 0.3}), layers::Dense({.units = 3, .activation = "softmax"})});
  model.compile(optimizers::Adam(0.01), losses::SparseCategoricalCrossentropy());
  Generator g(9);
  std::vector<float> x(40 * 6);
  std::vector<std::int32_t> y(40);
  for (float& v : x) v = g.uniform(-1.f, 1.f);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>(i % 3);
  const data::Dataset ds =
      data::Dataset::from_tensor_slices({Tensor::from_vector(x, {40, 6}), Tensor::from_vector(y, {40})}).shuffle(40).batch(8);
  FitOptions o;
  o.epochs = 6;
  o.verbose = 0;
  o.callbacks = {std::make_shared<BackupAndRestore>((dir / "backup").string()),
                 std::make_shared<EarlyStopping>(EarlyStoppingOptions{
                     .monitor = "loss", .min_delta = 10, .patience = 4}),
                 std::make_shared<ReduceLROnPlateau>(
                     ReduceLROnPlateauOptions{.monitor = "loss", .factor = 0.5, .patience = 2, .min_delta = 10, .cooldown = 1})};
  model.fit(ds, o);
  model.save_weights((dir / "final.weights").string());
}

TEST(BackupAndRestoreResume, Child) {
  const char* dir = std::getenv("TOWER_BACKUP_CHILD_DIR");
  if (!dir) GTEST_SKIP() << "run by BackupAndRestoreResume.AKillInEachWriteInTurnResumesToTheSameWeights";
  train(dir);
}

// Runs the child in `dir`, stopped and killed in its n-th write when n > 0; true when it was killed.
bool run_child(const fs::path& dir, int n) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    if (v.rfind("OMP_NUM_THREADS=", 0) != 0 && v.rfind("TOWER_TEST_STOP_IN_WRITE=", 0) != 0) env.push_back(v);
  }
  env.push_back("OMP_NUM_THREADS=1");
  env.push_back("TOWER_BACKUP_CHILD_DIR=" + dir.string());
  if (n > 0) env.push_back("TOWER_TEST_STOP_IN_WRITE=*");
  std::vector<std::string> args = {fs::read_symlink("/proc/self/exe").string(),
                                   "--gtest_filter=BackupAndRestoreResume.Child"};
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& v : env) envp.push_back(v.data());
  envp.push_back(nullptr);
  const int log = ::open((dir.string() + ".log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(log);
  int status = 0, stops = 0;
  for (;;) {
    ::waitpid(pid, &status, WUNTRACED);
    if (WIFSTOPPED(status)) {
      if (++stops < n) {
        ::kill(pid, SIGCONT);
        continue;
      }
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return true;
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed; see " << dir << ".log";
    return false;
  }
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(BackupAndRestoreResume, AKillInEachWriteInTurnResumesToTheSameWeights) {
  const fs::path root = fs::temp_directory_path() / ("tower_backup_resume_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  ASSERT_FALSE(run_child(root / "whole", 0));
  const std::string expected = bytes_of(root / "whole" / "final.weights");
  ASSERT_FALSE(expected.empty());
  EXPECT_FALSE(fs::exists(root / "whole" / "backup" / "latest.weights"));  // deleted when fit ends
  int kills = 0;
  std::error_code ec;
  for (int n = 1;; ++n) {
    const fs::path dir = root / ("write" + std::to_string(n));
    if (!run_child(dir, n)) break;
    ++kills;
    ASSERT_FALSE(run_child(dir, 0));  // resumes from the backup
    EXPECT_TRUE(bytes_of(dir / "final.weights") == expected) << "killed in write " << n;
    // (The program's own save_weights, killed half-way, may leave its temporary file beside final.weights.)
    for (const auto& e : fs::recursive_directory_iterator(dir / "backup", fs::directory_options::none, ec))
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
  }
  std::cout << kills << " fits, each killed in its n-th file write, resumed to the uninterrupted weights\n";
  EXPECT_GE(kills, 6);  // a backup per epoch (EarlyStopping ends the fit after epoch 5), then the final weights
  fs::remove_all(root);
}

}  // namespace
}  // namespace tower::callbacks
