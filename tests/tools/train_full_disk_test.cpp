// `tower train` on a full disk: the checkpoint write fails with an error naming checkpoints/state.weights and the
// system error, the command exits with status 1, the previous checkpoint stays byte for byte, and once there is
// room again --resume finishes the run with the weights of an uninterrupted one. The disk is made full with a
// file size limit (RLIMIT_FSIZE with SIGXFSZ ignored: "File too large"; runs everywhere) and, where user
// namespaces are allowed, with a real tmpfs filled up inside `unshare -rm` ("No space left on device").
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "api/io/weights_file.h"
#include "tests/tools/tools_testing.h"

namespace tower::experiment {
namespace {

namespace fs = std::filesystem;

// The state file (weights and Adam's two slots, about 450 KB) is much larger than anything else the run
// writes, so a limit between them fails the checkpoint and nothing before it.
const std::string kExperiment = R"(seed: 4
data:
  source: synthetic
  shape: [8, 8, 1]
  classes: 4
  train_examples: 64
  test_examples: 16
model:
  layers:
    - {type: Conv2D, filters: 4, kernel_size: 3, activation: relu}
    - {type: Flatten}
    - {type: Dense, units: 256, activation: relu}
    - {type: Dense, units: 4, activation: softmax}
compile:
  optimizer: {type: Adam, learning_rate: 0.001}
  loss: sparse_categorical_crossentropy
fit: {epochs: 2, batch_size_per_replica: 16, verbose: 0}
)";

struct Output {
  int status = -1;
  std::string text;
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Runs `tower args...`; with a file size limit (bytes) when `fsize` > 0.
Output tower(std::vector<std::string> args, const fs::path& log, rlim_t fsize = 0) {
  args.insert(args.begin(), TOWER_COMMAND);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    if (fsize > 0) {
      ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG instead of killing
      const rlimit limit{fsize, fsize};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_all(log)};
}

std::vector<Tensor> weights_in(const fs::path& file) {
  std::vector<Tensor> out;
  for (const auto& t : io::read_weights_file(file.string()).weights) out.push_back(t.value);
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A 3-epoch run, uninterrupted, for reference.
std::vector<Tensor> uninterrupted(const fs::path& root, const std::string& file) {
  const Output o = tower({"train", file, "--out", (root / "whole").string(), "--set", "fit.epochs=3"}, root / "whole.log");
  EXPECT_EQ(o.status, 0) << o.text;
  return weights_in(root / "whole" / "final.weights");
}

TEST(TrainFullDisk, AFileSizeLimitFailsTheCheckpointCleanlyAndResumeFinishes) {
  const fs::path root = testing::fresh_dir();
  fs::create_directories(root);
  const std::string file = (root / "exp.yaml").string();
  std::ofstream(file) << kExperiment;
  const fs::path run = root / "run", state = run / "checkpoints" / "state.weights";

  Output o = tower({"train", file, "--out", run.string()}, root / "1.log");
  ASSERT_EQ(o.status, 0) << o.text;
  const std::string before = read_all(state);
  ASSERT_GT(before.size(), 300000u);

  // Training a third epoch with files limited to 64 KB: the logs grow, the checkpoint cannot be written.
  o = tower({"train", file, "--resume", run.string(), "--set", "fit.epochs=3"}, root / "2.log", 64 * 1024);
  EXPECT_EQ(o.status, 1) << o.text;
  // The epoch's weights file is written before the state, which commits the epoch: it meets the limit first, no
  // file is written, and the state stays at the previous epoch.
  const fs::path epoch3 = run / "checkpoints" / "epoch-003.weights";
  EXPECT_TRUE(contains(o.text, "tower train: error: cannot write '" + epoch3.string() + "': File too large")) << o.text;
  EXPECT_TRUE(contains(o.text, "(no file was written)")) << o.text;
  EXPECT_FALSE(fs::exists(epoch3));
  EXPECT_EQ(read_all(state), before);
  for (const auto& e : fs::recursive_directory_iterator(run))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();

  o = tower({"train", file, "--resume", run.string(), "--set", "fit.epochs=3"}, root / "3.log");
  ASSERT_EQ(o.status, 0) << o.text;
  testing::expect_identical(weights_in(run / "final.weights"), uninterrupted(root, file));
  fs::remove_all(root);
}

TEST(TrainFullDisk, AFullTmpfsFailsTheCheckpointCleanlyAndResumeFinishes) {
  if (std::system("unshare -rm true >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no user and mount namespaces here (unshare -rm fails): the tmpfs case is left out";
  const fs::path root = testing::fresh_dir();
  const fs::path mnt = root / "mnt", out = root / "out";
  fs::create_directories(mnt);
  fs::create_directories(out);
  const std::string file = (root / "exp.yaml").string();
  std::ofstream(file) << kExperiment;
  const std::string tower_command = TOWER_COMMAND, m = mnt.string(), o = out.string();
  // In a mount namespace of its own: a 2 MiB tmpfs; two epochs; the disk filled but for 64 KiB (room for the
  // logs, not for the checkpoint's temporary file); a third epoch that fails; the filler removed; --resume.
  std::ofstream(root / "script.sh")
      << "set -e\n"
      << "mount -t tmpfs -o size=2m tmpfs " << m << "\n"
      << tower_command << " train " << file << " --out " << m << "/run > " << o << "/1.log 2>&1\n"
      << "cp " << m << "/run/checkpoints/state.weights " << o << "/before.weights\n"
      << "dd if=/dev/zero of=" << m << "/filler bs=4096 2>/dev/null || true\n"
      << "truncate -s -64K " << m << "/filler\n"
      << "set +e\n"
      << tower_command << " train " << file << " --resume " << m << "/run --set fit.epochs=3 > " << o
      << "/2.log 2>&1\n"
      << "echo $? > " << o << "/2.status\n"
      << "set -e\n"
      << "cp " << m << "/run/checkpoints/state.weights " << o << "/after.weights\n"
      << "ls -a " << m << "/run " << m << "/run/checkpoints > " << o << "/listing\n"
      << "rm " << m << "/filler\n"
      << tower_command << " train " << file << " --resume " << m << "/run --set fit.epochs=3 > " << o
      << "/3.log 2>&1\n"
      << "cp " << m << "/run/final.weights " << o << "/final.weights\n";
  const int status = std::system(("unshare -rm sh " + (root / "script.sh").string() + " > " + o + "/script.log 2>&1").c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << read_all(out / "script.log") << read_all(out / "1.log") << read_all(out / "2.log") << read_all(out / "3.log");

  const std::string failed = read_all(out / "2.log");
  EXPECT_EQ(read_all(out / "2.status"), "1\n") << failed;
  // The epoch's weights file is written before the state (the state commits the epoch), so it meets the full
  // disk first.
  EXPECT_TRUE(contains(failed, "cannot write '" + m + "/run/checkpoints/epoch-003.weights': No space left on device"))
      << failed;
  EXPECT_EQ(read_all(out / "after.weights"), read_all(out / "before.weights"));
  EXPECT_FALSE(contains(read_all(out / "listing"), ".tmp-")) << read_all(out / "listing");
  testing::expect_identical(weights_in(out / "final.weights"), uninterrupted(root, file));
  fs::remove_all(root);
}

}  // namespace
}  // namespace tower::experiment
