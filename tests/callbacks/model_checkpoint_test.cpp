#include "api/callbacks/model_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "api/callbacks/lambda_callback.h"
#include "api/io/weights_file.h"
#include "api/losses/mean_squared_error.h"
#include "api/models/model.h"
#include "api/optimizers/sgd.h"
#include "api/metrics/accuracy_metrics.h"
#include "api/metrics/confusion_metrics.h"
#include "layers/dense.h"
#include "testing/fixtures.h"

namespace tower::callbacks {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir() {
  const fs::path d = fs::temp_directory_path() /
                     ("tower_ckpt_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                      "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

Logs logs_of(std::vector<std::pair<std::string, double>> values) {
  Logs logs;
  for (const auto& [k, v] : values) logs.set(k, v);
  return logs;
}

std::string fmt(const std::string& pattern, std::vector<std::pair<std::string, double>> values) {
  return detail::python_format(pattern, logs_of(std::move(values)), {"epoch", "batch"});
}

TEST(ModelCheckpoint, FormatsPlaceholdersAsPython) {
  EXPECT_EQ(fmt("ckpt-{epoch:02d}.weights", {{"epoch", 3}}), "ckpt-03.weights");
  EXPECT_EQ(fmt("{epoch}-{epoch:03}-{epoch:>4}-{epoch:<3}|", {{"epoch", 7}}), "7-007-   7-7  |");
  EXPECT_EQ(fmt("{val_loss:.4f}", {{"val_loss", 0.123456}}), "0.1235");
  EXPECT_EQ(fmt("{loss:.2e}", {{"loss", 0.000123}}), "1.23e-04");
  EXPECT_EQ(fmt("{acc:.1%}", {{"acc", 0.5}}), "50.0%");
  EXPECT_EQ(fmt("{loss}", {{"loss", 0.5}}), "0.5");
  EXPECT_EQ(fmt("{loss:+.1f}|{loss:08.3f}", {{"loss", -2.25}}), "-2.2|-002.250");
  EXPECT_EQ(fmt("{epoch:.1f}", {{"epoch", 2}}), "2.0");
  EXPECT_EQ(fmt("{{epoch}}-{epoch}", {{"epoch", 2}}), "{epoch}-2");
  EXPECT_EQ(fmt("plain.weights", {}), "plain.weights");
}

TEST(ModelCheckpoint, FormatErrorsNameTheFilepathAndTheKeys) {
  try {
    fmt("ckpt-{val_acc:.2f}", {{"epoch", 1}, {"loss", 0.5}});
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ckpt-{val_acc:.2f}"), std::string::npos) << what;
    EXPECT_NE(what.find("val_acc"), std::string::npos) << what;
    EXPECT_NE(what.find("epoch,loss"), std::string::npos) << what;
  }
  EXPECT_THROW(fmt("{loss:d}", {{"loss", 0.5}}), std::invalid_argument);  // Python: floats take no 'd'
  EXPECT_THROW(fmt("{epoch", {{"epoch", 1}}), std::invalid_argument);
  EXPECT_THROW(fmt("epoch}", {{"epoch", 1}}), std::invalid_argument);
  EXPECT_THROW(fmt("{epoch:x}", {{"epoch", 1}}), std::invalid_argument);
}

// Python's own str.format of floats (log values) and ints (epoch, batch) for specs combining every part of the
// mini-language (tests/reference/make_format_spec_fixtures.py): the same text, or an error where Python raises.
TEST(ModelCheckpoint, FormatSpecsMatchPythonsStrFormat) {
  const Config doc = testing::read_json_fixture("callbacks/format_spec.json");
  const Config::List& values = doc.at("values").as_list();
  int compared = 0;
  for (const Config& c : doc.at("cases").as_list()) {
    const std::string spec = c.as_list().at(0).as_string();
    const Config::List& results = c.as_list().at(1).as_list();
    ASSERT_EQ(results.size(), values.size());
    for (std::size_t k = 0; k < values.size(); ++k) {
      const std::string text = values[k].at("value").as_string();
      const bool is_int = values[k].at("int").as_bool();
      const Logs logs = logs_of({{"x", std::strtod(text.c_str(), nullptr)}});
      const std::string pattern = "{x:" + spec + "}";
      const std::vector<std::string> ints = is_int ? std::vector<std::string>{"x"} : std::vector<std::string>{};
      const auto format = [&] { return detail::python_format(pattern, logs, ints); };
      ++compared;
      if (results[k].is_null()) {
        EXPECT_THROW(format(), std::invalid_argument) << "'" << spec << "' of " << text;
        continue;
      }
      try {
        EXPECT_EQ(format(), results[k].as_string()) << "'" << spec << "' of " << text;
      } catch (const std::invalid_argument& e) {
        ADD_FAILURE() << "'" << spec << "' of " << text << " threw: " << e.what();
      }
    }
  }
  EXPECT_GT(compared, 10000);
}

TEST(ModelCheckpoint, FloatReprMatchesPython) {
  EXPECT_EQ(detail::python_float_repr(0.1), "0.1");
  EXPECT_EQ(detail::python_float_repr(1.0), "1.0");
  EXPECT_EQ(detail::python_float_repr(-2.5), "-2.5");
  EXPECT_EQ(detail::python_float_repr(123456.789), "123456.789");
  EXPECT_EQ(detail::python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(detail::python_float_repr(1e-05), "1e-05");
  EXPECT_EQ(detail::python_float_repr(1.5e-07), "1.5e-07");
  EXPECT_EQ(detail::python_float_repr(1e16), "1e+16");
  EXPECT_EQ(detail::python_float_repr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(detail::python_float_repr(0.0), "0.0");
  EXPECT_EQ(detail::python_float_repr(static_cast<double>(0.1f)), "0.10000000149011612");
  EXPECT_EQ(detail::python_float_repr(std::nan("")), "nan");
  EXPECT_EQ(detail::python_float_repr(-INFINITY), "-inf");
}

struct Fixture {
  Sequential model{{InputLayer({.shape = {3}}), layers::Dense({.units = 2})}};
  Fixture() {
    model.compile(optimizers::SGD(0.1), losses::MeanSquaredError(), {metrics::Accuracy(), metrics::Recall()});
  }
  void set_all(float v) {
    for (const VariablePtr& w : model.weights()) w->value.fill(v);
  }
};

float first_value(const fs::path& file) { return io::read_weights_file(file.string()).weights.at(0).value.to_vector()[0]; }

TEST(ModelCheckpoint, SavesEveryEpochWithTheEpochInTheName) {
  const fs::path dir = fresh_dir();
  Fixture f;
  ModelCheckpoint cb((dir / "sub" / "ckpt-{epoch:02d}-{loss:.2f}.weights").string());
  cb.set_model(&f.model.impl());
  cb.on_train_begin(Logs());
  for (int e = 0; e < 3; ++e) {
    f.set_all(static_cast<float>(e));
    cb.on_epoch_begin(e, Logs());
    cb.on_epoch_end(e, logs_of({{"loss", 1.0 / (e + 1)}}));
  }
  EXPECT_EQ(first_value(dir / "sub" / "ckpt-01-1.00.weights"), 0.f);
  EXPECT_EQ(first_value(dir / "sub" / "ckpt-02-0.50.weights"), 1.f);
  EXPECT_EQ(first_value(dir / "sub" / "ckpt-03-0.33.weights"), 2.f);
  EXPECT_EQ(cb.last_saved_path(), (dir / "sub" / "ckpt-03-0.33.weights").string());
  fs::remove_all(dir);
}

TEST(ModelCheckpoint, SaveBestOnlyKeepsTheBest) {
  const fs::path dir = fresh_dir();
  Fixture f;
  ModelCheckpoint cb((dir / "ckpt-{epoch:02d}.weights").string(), {.save_best_only = true});
  ModelCheckpoint single((dir / "best.weights").string(), {.save_best_only = true});
  for (ModelCheckpoint* c : {&cb, &single}) c->set_model(&f.model.impl());
  const std::vector<double> val = {1.0, 0.8, 0.9, 0.7, 0.7};
  for (int e = 0; e < 5; ++e) {
    f.set_all(static_cast<float>(e));
    for (ModelCheckpoint* c : {&cb, &single}) c->on_epoch_end(e, logs_of({{"loss", 0.0}, {"val_loss", val[e]}}));
  }
  EXPECT_TRUE(fs::exists(dir / "ckpt-01.weights"));
  EXPECT_TRUE(fs::exists(dir / "ckpt-02.weights"));
  EXPECT_FALSE(fs::exists(dir / "ckpt-03.weights"));
  EXPECT_TRUE(fs::exists(dir / "ckpt-04.weights"));
  EXPECT_FALSE(fs::exists(dir / "ckpt-05.weights"));  // equal is not better
  EXPECT_EQ(first_value(dir / "best.weights"), 3.f);
  EXPECT_DOUBLE_EQ(*single.best(), 0.7);
  fs::remove_all(dir);
}

TEST(ModelCheckpoint, ModeAndInitialValueThreshold) {
  const fs::path dir = fresh_dir();
  Fixture f;
  ModelCheckpoint cb((dir / "acc-{epoch}.weights").string(),
                     {.monitor = "val_accuracy", .save_best_only = true, .initial_value_threshold = 0.6});
  cb.set_model(&f.model.impl());
  const std::vector<double> acc = {0.5, 0.7, 0.65, 0.9};
  for (int e = 0; e < 4; ++e) cb.on_epoch_end(e, logs_of({{"val_accuracy", acc[e]}}));
  EXPECT_FALSE(fs::exists(dir / "acc-1.weights"));  // below the threshold
  EXPECT_TRUE(fs::exists(dir / "acc-2.weights"));
  EXPECT_FALSE(fs::exists(dir / "acc-3.weights"));
  EXPECT_TRUE(fs::exists(dir / "acc-4.weights"));

  ModelCheckpoint min_mode((dir / "min-{epoch}.weights").string(),
                           {.monitor = "val_accuracy", .save_best_only = true, .mode = "min"});
  min_mode.set_model(&f.model.impl());
  for (int e = 0; e < 4; ++e) min_mode.on_epoch_end(e, logs_of({{"val_accuracy", acc[e]}}));
  EXPECT_TRUE(fs::exists(dir / "min-1.weights"));
  EXPECT_FALSE(fs::exists(dir / "min-2.weights"));
  fs::remove_all(dir);
}

// Mode "auto" follows the compiled metric's direction: a rising recall is improving (it was minimized by name).
TEST(ModelCheckpoint, ModeAutoMaximizesRecall) {
  const fs::path dir = fresh_dir();
  Fixture f;
  ModelCheckpoint cb((dir / "r-{epoch}.weights").string(), {.monitor = "val_recall", .save_best_only = true});
  cb.set_model(&f.model.impl());
  const std::vector<double> recall = {0.5, 0.6, 0.55};
  for (int e = 0; e < 3; ++e) cb.on_epoch_end(e, logs_of({{"val_recall", recall[e]}}));
  EXPECT_TRUE(fs::exists(dir / "r-1.weights"));
  EXPECT_TRUE(fs::exists(dir / "r-2.weights"));
  EXPECT_FALSE(fs::exists(dir / "r-3.weights"));
  EXPECT_DOUBLE_EQ(*cb.best(), 0.6);
  fs::remove_all(dir);
}

TEST(ModelCheckpoint, AMissingMonitorWarnsOnceAndSavesEveryTime) {
  const fs::path dir = fresh_dir();
  Fixture f;
  ModelCheckpoint cb((dir / "c{epoch}.weights").string(), {.save_best_only = true});
  cb.set_model(&f.model.impl());
  ::testing::internal::CaptureStderr();
  for (int e = 0; e < 2; ++e) cb.on_epoch_end(e, logs_of({{"loss", 1.0}}));
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("val_loss"), std::string::npos) << err;
  EXPECT_EQ(err.find("Warning", 1), std::string::npos) << err;
  EXPECT_TRUE(fs::exists(dir / "c1.weights"));
  EXPECT_TRUE(fs::exists(dir / "c2.weights"));
  fs::remove_all(dir);
}

TEST(ModelCheckpoint, SaveFreqInBatches) {
  const fs::path dir = fresh_dir();
  Fixture f;
  ModelCheckpoint cb((dir / "e{epoch}-b{batch}.weights").string(), {.save_freq = std::int64_t{2}});
  cb.set_model(&f.model.impl());
  for (int e = 0; e < 2; ++e) {
    cb.on_epoch_begin(e, Logs());
    for (std::int64_t b = 0; b < 3; ++b) cb.on_train_batch_end(b, logs_of({{"loss", 1.0}, {"size", 4}}));
    cb.on_epoch_end(e, logs_of({{"loss", 1.0}}));
  }
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"e1-b2.weights", "e2-b1.weights", "e2-b3.weights"}));
  fs::remove_all(dir);
}

TEST(ModelCheckpoint, RejectsWhatItCannotDo) {
  EXPECT_THROW(ModelCheckpoint("m.weights", {.save_weights_only = false}), std::invalid_argument);
  EXPECT_THROW(ModelCheckpoint("m.weights", {.save_freq = "batch"}), std::invalid_argument);
  EXPECT_THROW(ModelCheckpoint("m.weights", {.save_freq = std::int64_t{0}}), std::invalid_argument);
  EXPECT_THROW(ModelCheckpoint("m.weights", {.mode = "best"}), std::invalid_argument);
  EXPECT_THROW(ModelCheckpoint(""), std::invalid_argument);
}

TEST(ModelCheckpoint, WorksInsideFitAndTheFileLoadsBack) {
  const fs::path dir = fresh_dir();
  Fixture f;
  const Tensor x = Tensor::full({8, 3}, 1.f), y = Tensor::full({8, 2}, 0.5f);
  auto cb = std::make_shared<ModelCheckpoint>((dir / "last.weights").string(),
                                              ModelCheckpointOptions{.monitor = "loss", .save_best_only = true});
  f.model.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0, .callbacks = {cb}});
  const std::vector<Tensor> trained = f.model.get_weights();
  f.set_all(0.f);
  f.model.load_weights((dir / "last.weights").string());  // the loss fell every epoch: the last is the best
  const std::vector<Tensor> loaded = f.model.get_weights();
  for (std::size_t i = 0; i < trained.size(); ++i) EXPECT_EQ(loaded[i].to_vector(), trained[i].to_vector());
  fs::remove_all(dir);
}

// A diverging run (the learning rate raised to 1e30 after two epochs): the weights become infinite, then NaN,
// and no checkpoint gets them; one warning per callback names the weight and the checkpoint that is kept.
TEST(ModelCheckpoint, NeverSavesTheNonFiniteWeightsOfADivergedRun) {
  const fs::path dir = fresh_dir();
  Fixture f;
  const Tensor x = Tensor::full({8, 3}, 1.f), y = Tensor::full({8, 2}, 0.5f);
  auto last = std::make_shared<ModelCheckpoint>((dir / "last.weights").string());
  auto each = std::make_shared<ModelCheckpoint>((dir / "e{epoch}.weights").string());
  std::vector<Tensor> after_epoch_2;
  auto diverge = std::make_shared<LambdaCallback>(LambdaCallbackOptions{
      .on_epoch_begin = [&](int epoch, const Logs&) { if (epoch == 2) f.model.optimizer()->set_learning_rate(1e30); },
      .on_epoch_end = [&](int epoch, const Logs&) { if (epoch == 1) after_epoch_2 = f.model.get_weights(); }});
  ::testing::internal::CaptureStderr();
  const History h = f.model.fit(x, y, {.epochs = 5, .batch_size = 4, .verbose = 0, .callbacks = {diverge, last, each}});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(std::isfinite(h["loss"].back()));
  EXPECT_TRUE(fs::exists(dir / "e1.weights"));
  EXPECT_TRUE(fs::exists(dir / "e2.weights"));
  for (const char* name : {"e3.weights", "e4.weights", "e5.weights"}) EXPECT_FALSE(fs::exists(dir / name)) << name;
  EXPECT_EQ(last->last_saved_path(), (dir / "last.weights").string());
  // The file still holds epoch 2, finite, and loads.
  const io::WeightsFile file = io::read_weights_file((dir / "last.weights").string());
  EXPECT_EQ(io::first_non_finite(file.weights), "");
  f.model.load_weights((dir / "last.weights").string());
  const std::vector<Tensor> loaded = f.model.get_weights();
  for (std::size_t i = 0; i < loaded.size(); ++i) EXPECT_EQ(loaded[i].to_vector(), after_epoch_2[i].to_vector());
  // One warning for each callback, not one per epoch.
  std::size_t warnings = 0;
  for (std::size_t at = err.find("Warning: ModelCheckpoint: not saving"); at != std::string::npos;
       at = err.find("Warning: ModelCheckpoint: not saving", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 2u) << err;
  EXPECT_NE(err.find("not saving " + (dir / "last.weights").string() + " (epoch 3): weight '"), std::string::npos) << err;
  EXPECT_NE(err.find("is NaN or infinite, the training diverged; the last good checkpoint, " +
                     (dir / "last.weights").string() + ", is kept"),
            std::string::npos)
      << err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tower::callbacks
