#include "api/callbacks/backup_and_restore.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "api/callbacks/early_stopping.h"
#include "api/callbacks/lambda_callback.h"
#include "api/io/weights_file.h"
#include "api/losses/mean_squared_error.h"
#include "api/models/model.h"
#include "api/optimizers/sgd.h"
#include "distribute/mirrored_strategy.h"
#include "layers/dense.h"
#include "layers/dropout.h"

namespace tower::callbacks {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir() {
  const fs::path d = fs::temp_directory_path() /
                     ("tower_backup_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                      "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

Sequential make_model(std::uint64_t seed) {
  set_random_seed(seed);
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 4, .activation = "tanh"}),
                layers::Dense({.units = 2})});
  m.compile(optimizers::SGD({.learning_rate = 0.05, .momentum = 0.9}), losses::MeanSquaredError());
  return m;
}

std::pair<Tensor, Tensor> data() {
  Generator g(11);
  std::vector<float> x(16 * 3), y(16 * 2);
  for (float& v : x) v = g.uniform(-1.f, 1.f);
  for (float& v : y) v = g.uniform(-1.f, 1.f);
  return {Tensor::from_vector(x, {16, 3}), Tensor::from_vector(y, {16, 2})};
}

FitOptions options(std::vector<CallbackPtr> cbs) {
  return {.epochs = 6, .batch_size = 4, .verbose = 0, .callbacks = std::move(cbs), .shuffle = false};
}

void expect_same_weights(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::vector<float> va = a[i].to_vector(), vb = b[i].to_vector();
    ASSERT_EQ(va.size(), vb.size());
    for (std::size_t k = 0; k < va.size(); ++k) EXPECT_FLOAT_EQ(va[k], vb[k]) << "weight " << i << " element " << k;
  }
}

TEST(BackupAndRestore, AnInterruptedFitResumesAndEndsWhereAnUninterruptedOneDoes) {
  const auto [x, y] = data();
  Sequential reference = make_model(5);
  reference.fit(x, y, options({}));

  const fs::path dir = fresh_dir();
  auto backup = std::make_shared<BackupAndRestore>(dir.string());
  Sequential interrupted = make_model(5);
  auto crash = std::make_shared<LambdaCallback>(LambdaCallbackOptions{.on_epoch_begin = [](int epoch, const Logs&) {
    if (epoch == 3) throw std::runtime_error("interrupted");
  }});
  EXPECT_THROW(interrupted.fit(x, y, options({backup, crash})), std::runtime_error);
  ASSERT_TRUE(fs::exists(backup->backup_path()));  // an exception does not delete the backup

  // A new process: a fresh model with other initial weights and a fresh optimizer.
  Sequential resumed = make_model(99);
  History h = resumed.fit(x, y, options({std::make_shared<BackupAndRestore>(dir.string())}));
  EXPECT_EQ(h.epoch(), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(resumed.optimizer()->iterations(), reference.optimizer()->iterations());
  expect_same_weights(resumed.get_weights(), reference.get_weights());
  // Restored by position: the resumed model's layers have other automatic names.
  std::vector<Tensor> slots_a, slots_b;
  for (const VariablePtr& v : resumed.optimizer()->variables()) slots_a.push_back(v->value);
  for (const VariablePtr& v : reference.optimizer()->variables()) slots_b.push_back(v->value);
  expect_same_weights(slots_a, slots_b);
  EXPECT_FALSE(fs::exists(dir));  // deleted after a completed fit
}

TEST(BackupAndRestore, TheBackupHoldsWeightsSlotsAndTrainingState) {
  const auto [x, y] = data();
  const fs::path dir = fresh_dir();
  Sequential m = make_model(1);
  auto backup = std::make_shared<BackupAndRestore>(dir.string(), BackupAndRestoreOptions{.delete_checkpoint = false});
  m.fit(x, y, options({backup}));
  const io::WeightsFile file = io::read_weights_file(backup->backup_path());
  const Config& state = file.extra.at("backup_and_restore");
  EXPECT_EQ(state.at("epoch").as_int(), 5);
  EXPECT_EQ(state.at("iterations").as_int(), 6 * 4);
  EXPECT_DOUBLE_EQ(state.at("learning_rate").as_double(), 0.05);
  const std::size_t n_weights = m.weights().size(), n_slots = m.optimizer()->variables().size();
  ASSERT_EQ(file.weights.size(), n_weights + n_slots);
  EXPECT_EQ(file.weights[0].name, "model/" + m.weights()[0]->path);
  EXPECT_EQ(file.weights[n_weights].name, "optimizer/" + m.optimizer()->variables()[0]->path);
  expect_same_weights({file.weights[0].value}, {m.weights()[0]->value});

  // A finished backup makes the next fit start past the last epoch: nothing runs, weights come back.
  Sequential again = make_model(2);
  History h = again.fit(x, y, options({std::make_shared<BackupAndRestore>(dir.string())}));
  EXPECT_TRUE(h.epoch().empty());
  expect_same_weights(again.get_weights(), m.get_weights());
  EXPECT_FALSE(fs::exists(dir));
}

TEST(BackupAndRestore, BatchLevelBackupsRestartTheirEpoch) {
  const auto [x, y] = data();
  const fs::path dir = fresh_dir();
  Sequential m = make_model(1);
  auto backup = std::make_shared<BackupAndRestore>(dir.string(), BackupAndRestoreOptions{.save_freq = std::int64_t{3}});
  int calls = 0;
  auto crash = std::make_shared<LambdaCallback>(LambdaCallbackOptions{.on_train_batch_end = [&](std::int64_t, const Logs&) {
    if (++calls == 7) throw std::runtime_error("interrupted");  // epoch 1, batch 2; saved after batch 1
  }});
  EXPECT_THROW(m.fit(x, y, options({backup, crash})), std::runtime_error);
  const io::WeightsFile file = io::read_weights_file(backup->backup_path());
  EXPECT_EQ(file.extra.at("backup_and_restore").at("epoch").as_int(), 0);
  EXPECT_EQ(file.extra.at("backup_and_restore").at("iterations").as_int(), 6);
  Sequential resumed = make_model(3);
  History h = resumed.fit(x, y, options({std::make_shared<BackupAndRestore>(dir.string())}));
  EXPECT_EQ(h.epoch(), (std::vector<int>{1, 2, 3, 4, 5}));
}

// EarlyStopping resumes from its restored state whether it is listed before or after BackupAndRestore, and uses
// that state once: the next fit starts it afresh (its best is then that fit's own).
TEST(BackupAndRestore, RestoredCallbackStatesAreIndependentOfOrderAndUsedOnce) {
  const auto [x, y] = data();
  const auto fit_with = [&](bool early_stopping_first, const fs::path& dir) {
    auto es = std::make_shared<EarlyStopping>(EarlyStoppingOptions{.monitor = "loss", .patience = 2});
    auto backup = std::make_shared<BackupAndRestore>(dir.string());
    std::vector<CallbackPtr> cbs = early_stopping_first ? std::vector<CallbackPtr>{es, backup}
                                                        : std::vector<CallbackPtr>{backup, es};
    return std::make_pair(es, cbs);
  };
  std::vector<std::shared_ptr<EarlyStopping>> resumed;
  std::vector<Sequential> models;
  std::vector<History> histories;
  for (bool first : {true, false}) {
    const fs::path dir = fresh_dir() / (first ? "first" : "second");
    auto [es, cbs] = fit_with(first, dir);
    cbs.push_back(std::make_shared<LambdaCallback>(LambdaCallbackOptions{.on_epoch_begin = [](int epoch, const Logs&) {
      if (epoch == 3) throw std::runtime_error("interrupted");
    }}));
    Sequential interrupted = make_model(5);
    EXPECT_THROW(interrupted.fit(x, y, options(cbs)), std::runtime_error);
    auto [again, again_cbs] = fit_with(first, dir);
    models.push_back(make_model(5));
    histories.push_back(models.back().fit(x, y, options(again_cbs)));
    EXPECT_EQ(histories.back().epoch().front(), 3);
    resumed.push_back(again);
  }
  EXPECT_EQ(histories[0].epoch(), histories[1].epoch());
  EXPECT_EQ(histories[0]["loss"], histories[1]["loss"]);
  EXPECT_EQ(resumed[0]->best(), resumed[1]->best());
  EXPECT_EQ(resumed[0]->wait(), resumed[1]->wait());
  EXPECT_EQ(resumed[0]->best_epoch(), resumed[1]->best_epoch());
  // The next fit, on targets whose loss is far above the restored best.
  Tensor far = y.clone();
  for (float& v : std::span<float>(far.data<float>(), static_cast<std::size_t>(far.numel()))) v *= 30.f;
  for (std::size_t k = 0; k < 2; ++k) {
    const History h = models[k].fit(x, far, options({resumed[k]}));
    const std::vector<double>& loss = h["loss"];
    ASSERT_FALSE(loss.empty());
    ASSERT_TRUE(resumed[k]->best());
    EXPECT_DOUBLE_EQ(*resumed[k]->best(), *std::min_element(loss.begin(), loss.end()))
        << (k == 0 ? "listed before" : "listed after") << " BackupAndRestore, the previous fit's best was kept";
  }
}

TEST(BackupAndRestore, ADamagedBackupIsAClearError) {
  const auto [x, y] = data();
  const fs::path dir = fresh_dir();
  fs::create_directories(dir);
  const std::string path = (dir / "latest.weights").string();
  std::ofstream(path) << "not a weights file";
  Sequential m = make_model(1);
  try {
    m.fit(x, y, options({std::make_shared<BackupAndRestore>(dir.string())}));
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("BackupAndRestore"), std::string::npos) << what;
    EXPECT_NE(what.find(path), std::string::npos) << what;
  }
  EXPECT_TRUE(fs::exists(path));  // left for the user to inspect
  fs::remove_all(dir);
}

TEST(BackupAndRestore, ABackupOfAnotherModelIsRefusedWithoutTouchingTheWeights) {
  const auto [x, y] = data();
  const fs::path dir = fresh_dir();
  Sequential m = make_model(1);
  m.fit(x, y, options({std::make_shared<BackupAndRestore>(dir.string(), BackupAndRestoreOptions{.delete_checkpoint = false})}));
  Sequential other({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  other.compile(optimizers::SGD({.learning_rate = 0.05, .momentum = 0.9}), losses::MeanSquaredError());
  const std::vector<Tensor> before = other.get_weights();
  EXPECT_THROW(other.fit(x, y, options({std::make_shared<BackupAndRestore>(dir.string())})), std::runtime_error);
  expect_same_weights(other.get_weights(), before);
  fs::remove_all(dir);
}

TEST(BackupAndRestore, TheTemporaryFileOfAKilledSaveIsRemoved) {
  const fs::path dir = fresh_dir();
  fs::create_directories(dir);
  // A process that is gone: a child that has exited.
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  int status = 0;
  ::waitpid(gone, &status, 0);
  const fs::path stale = dir / ("latest.weights.tmp-" + std::to_string(gone));
  const fs::path live = dir / ("latest.weights.tmp-" + std::to_string(::getppid()));
  std::ofstream(stale) << "half a backup";
  std::ofstream(live) << "another process's write in progress";
  auto [x, y] = data();
  Sequential m = make_model(3);
  m.fit(x, y, options({std::make_shared<BackupAndRestore>(dir.string(), BackupAndRestoreOptions{.delete_checkpoint = false})}));
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  fs::remove_all(dir);
}

TEST(BackupAndRestore, RejectsBadArguments) {
  EXPECT_THROW(BackupAndRestore(""), std::invalid_argument);
  EXPECT_THROW(BackupAndRestore("d", {.save_freq = "batch"}), std::invalid_argument);
  EXPECT_THROW(BackupAndRestore("d", {.save_freq = std::int64_t{-1}}), std::invalid_argument);
}

// A diverging run (the learning rate raised to 1e30 after two epochs) never replaces the backup with non-finite
// weights: the backup still holds epoch 2, finite, with one warning, and a new fit resumes from it.
TEST(BackupAndRestore, NeverBacksUpTheNonFiniteWeightsOfADivergedRun) {
  const auto [x, y] = data();
  const fs::path dir = fresh_dir();
  Sequential m = make_model(1);
  auto backup = std::make_shared<BackupAndRestore>(dir.string(), BackupAndRestoreOptions{.delete_checkpoint = false});
  std::vector<Tensor> after_epoch_2;
  auto diverge = std::make_shared<LambdaCallback>(LambdaCallbackOptions{
      .on_epoch_begin = [&](int epoch, const Logs&) { if (epoch == 2) m.optimizer()->set_learning_rate(1e30); },
      .on_epoch_end = [&](int epoch, const Logs&) { if (epoch == 1) after_epoch_2 = m.get_weights(); }});
  ::testing::internal::CaptureStderr();
  const History h = m.fit(x, y, options({diverge, backup}));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(std::isfinite(h["loss"].back()));
  EXPECT_EQ(err.find("Warning: BackupAndRestore: not backing up to " + backup->backup_path() + ": '"), 0u) << err;
  EXPECT_EQ(err.find("Warning", 1), std::string::npos) << err;
  const io::WeightsFile file = io::read_weights_file(backup->backup_path());
  EXPECT_EQ(io::first_non_finite(file.weights), "");
  EXPECT_EQ(file.extra.at("backup_and_restore").at("epoch").as_int(), 1);
  Sequential resumed = make_model(2);
  const History rest = resumed.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0,
                                          .callbacks = {std::make_shared<BackupAndRestore>(dir.string())}, .shuffle = false});
  EXPECT_EQ(rest.epoch(), (std::vector<int>{2}));
  EXPECT_TRUE(std::isfinite(rest["loss"].back()));
  fs::remove_all(dir);
}

// Dense -> Dropout(seed 17) -> Dense -> Dropout (unseeded) -> Dense, compiled in the scope of `strategy` when given.
Sequential make_dropout_model(std::uint64_t seed, distribute::Strategy* strategy = nullptr) {
  std::optional<distribute::StrategyScope> scope;
  if (strategy) scope.emplace(strategy->scope());
  set_random_seed(seed);
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 16, .activation = "tanh"}),
                layers::Dropout({.rate = 0.4f, .seed = 17}), layers::Dense({.units = 8, .activation = "tanh"}),
                layers::Dropout({.rate = 0.3f}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD({.learning_rate = 0.05, .momentum = 0.9}), losses::MeanSquaredError());
  return m;
}

// Fits `make` uninterrupted, then interrupted at epoch 3 and resumed by a fresh model (other initial weights),
// and expects the same weights, bit for bit.
template <class Make> void expect_dropout_resume_equals_uninterrupted(Make make) {
  const auto [x, y] = data();
  Sequential reference = make(5);
  reference.fit(x, y, options({}));
  const fs::path dir = fresh_dir();
  Sequential interrupted = make(5);
  auto crash = std::make_shared<LambdaCallback>(LambdaCallbackOptions{.on_epoch_begin = [](int epoch, const Logs&) {
    if (epoch == 3) throw std::runtime_error("interrupted");
  }});
  EXPECT_THROW(interrupted.fit(x, y, options({std::make_shared<BackupAndRestore>(dir.string()), crash})),
               std::runtime_error);
  Sequential resumed = make(5);
  resumed.set_weights(make(99).get_weights());
  History h = resumed.fit(x, y, options({std::make_shared<BackupAndRestore>(dir.string())}));
  EXPECT_EQ(h.epoch(), (std::vector<int>{3, 4, 5}));
  const std::vector<Tensor> got = resumed.get_weights(), want = reference.get_weights();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i].to_vector(), want[i].to_vector()) << "weight " << i;
}

// The masks of a seeded Dropout follow the training's steps, which the backup keeps (and an unseeded one's too).
TEST(BackupAndRestore, SeededDropoutResumesToTheUninterruptedWeights) {
  expect_dropout_resume_equals_uninterrupted([](std::uint64_t seed) { return make_dropout_model(seed); });
}

TEST(BackupAndRestore, DropoutUnderASharedReplicaStrategyResumesToTheUninterruptedWeights) {
  distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  expect_dropout_resume_equals_uninterrupted([&](std::uint64_t seed) { return make_dropout_model(seed, &strategy); });
}

TEST(BackupAndRestore, DropoutUnderMirroredVariablesResumesToTheUninterruptedWeights) {
  distribute::MirroredStrategy strategy({"cpu:0", "cpu:1"}, nullptr, {.mirror_variables = true});
  expect_dropout_resume_equals_uninterrupted([&](std::uint64_t seed) { return make_dropout_model(seed, &strategy); });
}

}  // namespace
}  // namespace tower::callbacks
