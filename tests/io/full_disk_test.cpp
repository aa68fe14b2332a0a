// A full disk while saving: Model::save_weights (Tower and Keras ".weights.h5" files), Model::save,
// ModelCheckpoint and BackupAndRestore throw an error naming the file and the system error, and leave the
// previous file whole, loadable and unchanged, with no temporary file behind. Two ways to fill the disk:
//  - a file size limit (RLIMIT_FSIZE, SIGXFSZ ignored): a write past it fails with EFBIG, "File too large".
//    Needs no privilege, so it runs everywhere.
//  - a real full file system: a small tmpfs, mounted in a user and mount namespace of a child process (this test
//    binary run by `unshare -rm`, FullDisk.TmpfsChild) and filled up: ENOSPC, "No space left on device".
//    Skipped where user namespaces are not allowed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>

#include "api/callbacks/backup_and_restore.h"
#include "api/callbacks/lambda_callback.h"
#include "api/callbacks/model_checkpoint.h"
#include "api/io/weights_file.h"
#include "api/losses/mean_squared_error.h"
#include "api/models/model.h"
#include "api/optimizers/adam.h"
#include "layers/dense.h"

namespace tower {
namespace {

namespace fs = std::filesystem;
using callbacks::CallbackPtr;
using callbacks::Logs;

// Makes writes fail while it lives.
class FullDisk {
 public:
  virtual ~FullDisk() = default;
};
using MakeFullDisk = std::function<std::unique_ptr<FullDisk>()>;

// RLIMIT_FSIZE of this process, with SIGXFSZ ignored so that a write past it fails with EFBIG.
class FileSizeLimit : public FullDisk {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    previous_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  }
  ~FileSizeLimit() override {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, previous_);
  }

 private:
  rlimit saved_{};
  void (*previous_)(int) = SIG_DFL;
};

// A file that takes every free byte of its file system.
class Filler : public FullDisk {
 public:
  explicit Filler(fs::path path) : path_(std::move(path)) {
    FILE* f = std::fopen(path_.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    if (!f) return;
    std::setvbuf(f, nullptr, _IONBF, 0);
    const std::string chunk(4096, 'x');
    while (std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size()) {
    }
    for (char c = 'x'; std::fwrite(&c, 1, 1, f) == 1;) {
    }
    EXPECT_EQ(errno, ENOSPC);
    std::fclose(f);
  }
  ~Filler() override { fs::remove(path_); }

 private:
  fs::path path_;
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

Sequential make_model(std::uint64_t seed) {
  set_random_seed(seed);
  // Named layers: ".weights.h5" files are matched by layer name.
  Sequential m({InputLayer({.shape = {64}}), layers::Dense({.units = 128, .activation = "tanh", .name = "hidden"}),
                layers::Dense({.units = 4, .name = "out"})});
  m.compile(optimizers::Adam(1e-3), losses::MeanSquaredError());
  return m;
}

std::pair<Tensor, Tensor> data() {
  Generator g(3);
  std::vector<float> x(32 * 64), y(32 * 4);
  for (float& v : x) v = g.uniform(-1.f, 1.f);
  for (float& v : y) v = g.uniform(-1.f, 1.f);
  return {Tensor::from_vector(x, {32, 64}), Tensor::from_vector(y, {32, 4})};
}

FitOptions fit_options(std::vector<CallbackPtr> cbs, int epochs = 3) {
  return {.epochs = epochs, .batch_size = 8, .verbose = 0, .callbacks = std::move(cbs), .shuffle = false};
}

void expect_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_vector(), b[i].to_vector()) << what << ", weight " << i;
}

// f must throw std::runtime_error naming `path` and `error`.
void expect_write_error(const std::function<void()>& f, const fs::path& path, const std::string& error) {
  try {
    f();
    ADD_FAILURE() << "no error writing " << path;
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_NE(what.find(error), std::string::npos) << what;
  }
}

void expect_no_temporaries(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
}

// Every writer, each with a good file already written, then a full disk: a clear error, the old file intact.
void check_writers(const fs::path& dir, const MakeFullDisk& full_disk, const std::string& error) {
  const auto [x, y] = data();

  // Model::save_weights in both formats, and Model::save.
  for (const std::string name : {"model.weights", "model.weights.h5", "whole.tower"}) {
    SCOPED_TRACE(name);
    const fs::path p = dir / name;
    Sequential m = make_model(1);
    const bool whole = name == "whole.tower";
    whole ? m.save(p) : m.save_weights(p);
    const std::string before = read_all(p);
    const std::vector<Tensor> saved = m.get_weights();
    m.fit(x, y, fit_options({}, 1));  // other weights: a successful save would change the file
    {
      const std::unique_ptr<FullDisk> full = full_disk();
      expect_write_error([&] { whole ? m.save(p) : m.save_weights(p); }, p, error);
    }
    EXPECT_EQ(read_all(p), before);
    if (whole) {
      expect_equal(Model::load(p).get_weights(), saved, "reloaded");
    } else {
      Sequential reloaded = make_model(2);
      reloaded.load_weights(p);
      expect_equal(reloaded.get_weights(), saved, "reloaded");
    }
  }

  // ModelCheckpoint and BackupAndRestore: saved after epoch 1, the disk full from epoch 2 on: fit() fails at
  // the end of epoch 2 naming the file, which still holds epoch 1.
  for (const bool backup : {false, true}) {
    SCOPED_TRACE(backup ? "BackupAndRestore" : "ModelCheckpoint");
    const fs::path path = backup ? dir / "backup" / "latest.weights" : dir / "ckpt.weights";
    CallbackPtr saver = backup ? CallbackPtr(std::make_shared<callbacks::BackupAndRestore>((dir / "backup").string()))
                               : CallbackPtr(std::make_shared<callbacks::ModelCheckpoint>(path.string()));
    std::unique_ptr<FullDisk> full;
    std::vector<Tensor> after_epoch_1;
    Sequential m = make_model(3);
    auto fill = std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaCallbackOptions{
        .on_epoch_begin = [&](int epoch, const Logs&) { if (epoch == 1) full = full_disk(); },
        .on_epoch_end = [&](int epoch, const Logs&) { if (epoch == 0) after_epoch_1 = m.get_weights(); }});
    expect_write_error([&] { m.fit(x, y, fit_options({saver, fill})); }, path, error);
    full.reset();
    if (!backup) {
      Sequential reloaded = make_model(4);
      reloaded.load_weights(path);
      expect_equal(reloaded.get_weights(), after_epoch_1, "the checkpoint");
      continue;
    }
    // The backup resumes training at epoch 2 and ends where an uninterrupted fit does.
    Sequential reference = make_model(3);
    reference.fit(x, y, fit_options({}));
    Sequential resumed = make_model(5);
    const callbacks::History h =
        resumed.fit(x, y, fit_options({std::make_shared<callbacks::BackupAndRestore>((dir / "backup").string())}));
    EXPECT_EQ(h.epoch(), (std::vector<int>{1, 2}));
    expect_equal(resumed.get_weights(), reference.get_weights(), "resumed from the backup");
  }
  expect_no_temporaries(dir);
}

fs::path fresh_dir() {
  const fs::path d = fs::temp_directory_path() /
                     ("tower_full_disk_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                      "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(FullDisk, AFileSizeLimitFailsEverySaveCleanly) {
  const fs::path dir = fresh_dir();
  // Smaller than any file written here (the smallest, model.weights, is about 35 KB).
  check_writers(dir, [] { return std::make_unique<FileSizeLimit>(4096); }, "File too large");
  fs::remove_all(dir);
}

// Runs inside the namespace made by FullDisk.AFullTmpfsFailsEverySaveCleanly, which names its mount point.
TEST(FullDisk, TmpfsChild) {
  const char* mount_point = std::getenv("TOWER_FULL_DISK_TMPFS");
  if (!mount_point) GTEST_SKIP() << "run by FullDisk.AFullTmpfsFailsEverySaveCleanly in a mount namespace";
  ASSERT_EQ(::mount("tmpfs", mount_point, "tmpfs", 0, "size=4m"), 0) << std::strerror(errno);
  const fs::path dir = mount_point;
  check_writers(dir, [&] { return std::make_unique<Filler>(dir / "filler"); }, "No space left on device");
  ::umount(mount_point);
}

TEST(FullDisk, AFullTmpfsFailsEverySaveCleanly) {
  if (std::system("unshare -rm true >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no user and mount namespaces here (unshare -rm fails): the tmpfs case is left out";
  const fs::path dir = fresh_dir();
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string command = "TOWER_FULL_DISK_TMPFS=" + dir.string() + " unshare -rm " + self +
                              " --gtest_filter=FullDisk.TmpfsChild 2>&1";
  FILE* p = ::popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) output.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_NE(output.find("[  PASSED  ] 1 test"), std::string::npos) << output;
  EXPECT_EQ(output.find("SKIPPED"), std::string::npos) << output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tower
