#include "api/callbacks/event_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "api/training/history.h"
#include "api/callbacks/lambda_callback.h"
#include "api/io/config.h"
#include "api/losses/mean_squared_error.h"
#include "api/metrics/regression_metrics.h"
#include "api/models/model.h"
#include "api/optimizers/schedules.h"
#include "api/optimizers/sgd.h"
#include "layers/dense.h"

namespace tower::callbacks {
namespace {

namespace fs = std::filesystem;

fs::path fresh_file() {
  const fs::path p = fs::temp_directory_path() /
                     ("tower_events_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                      "_" + std::to_string(::getpid()) + ".jsonl");
  fs::remove(p);
  return p;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Config> lines(const fs::path& p) {
  std::vector<Config> out;
  std::istringstream in(read(p));
  std::string line;
  while (std::getline(in, line)) out.push_back(Config::parse_json(line));
  return out;
}

Sequential model() {
  set_random_seed(3);
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(optimizers::schedules::ExponentialDecay(
                {.initial_learning_rate = 0.1, .decay_steps = 1, .decay_rate = 0.5})),
            losses::MeanSquaredError(), {metrics::MeanAbsoluteError()});
  return m;
}

std::pair<Tensor, Tensor> data(Index n) {
  Generator g(4);
  std::vector<float> x(static_cast<std::size_t>(n * 3)), y(static_cast<std::size_t>(n * 2));
  for (float& v : x) v = g.uniform(-1.f, 1.f);
  for (float& v : y) v = g.uniform(-1.f, 1.f);
  return {Tensor::from_vector(x, {n, 3}), Tensor::from_vector(y, {n, 2})};
}

TEST(EventLog, WritesOneLinePerStepAndEpochWithTheLogsOfFit) {
  const fs::path file = fresh_file();
  Sequential m = model();
  auto [x, y] = data(10);
  auto log = std::make_shared<EventLog>(file.string(), EventLogOptions{.run = "r1"});
  std::vector<double> batch_losses;
  auto spy = std::make_shared<LambdaCallback>(LambdaCallbackOptions{
      .on_train_batch_end = [&](std::int64_t, const Logs& l) { batch_losses.push_back(*l.get("loss")); }});
  const History h = m.fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 0, .callbacks = {log, spy}, .shuffle = false});

  const std::vector<Config> events = lines(file);
  // train_begin, 3 batches + epoch, 3 batches + epoch, train_end.
  ASSERT_EQ(events.size(), 10u) << read(file);
  EXPECT_EQ(events[0].at("event").as_string(), "train_begin");
  EXPECT_EQ(events[0].at("epochs").as_int(), 2);
  EXPECT_EQ(events[0].at("steps").as_int(), 3);
  EXPECT_EQ(events[0].at("pid").as_int(), ::getpid());
  const char* kinds[] = {"batch", "batch", "batch", "epoch", "batch", "batch", "batch", "epoch"};
  std::size_t b = 0;
  for (std::size_t i = 1; i < 9; ++i) {
    const Config& e = events[i];
    EXPECT_EQ(e.at("event").as_string(), kinds[i - 1]);
    EXPECT_EQ(e.at("run").as_string(), "r1");
    EXPECT_EQ(e.at("epoch").as_int(), i < 5 ? 0 : 1);
    EXPECT_TRUE(e.contains("mean_absolute_error"));
    EXPECT_FALSE(e.contains("size"));
    EXPECT_GT(e.at("time").as_double(), 1.6e9);
    EXPECT_GT(e.at("examples_per_sec").as_double(), 0.0);
    if (kinds[i - 1] == std::string("batch")) {
      // step counts optimizer updates; the learning rate is the one that step used (0.1 * 0.5^(step - 1)).
      EXPECT_EQ(e.at("step").as_int(), static_cast<std::int64_t>(b + 1));
      EXPECT_DOUBLE_EQ(e.at("learning_rate").as_double(), 0.1 * std::pow(0.5, static_cast<double>(b)));
      EXPECT_DOUBLE_EQ(e.at("loss").as_double(), batch_losses[b]);
      ++b;
    } else {
      const int epoch = static_cast<int>(e.at("epoch").as_int());
      EXPECT_EQ(e.at("step").as_int(), 3 * (epoch + 1));
      EXPECT_DOUBLE_EQ(e.at("loss").as_double(), h["loss"][static_cast<std::size_t>(epoch)]);
      EXPECT_DOUBLE_EQ(e.at("mean_absolute_error").as_double(), h["mean_absolute_error"][static_cast<std::size_t>(epoch)]);
    }
  }
  EXPECT_EQ(events[9].at("event").as_string(), "train_end");
  EXPECT_EQ(events[9].at("step").as_int(), 6);

  // A second fit (a resumed run) appends, and its steps go on counting.
  m.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0, .callbacks = {log}, .shuffle = false});
  const std::vector<Config> more = lines(file);
  ASSERT_EQ(more.size(), 16u);
  EXPECT_EQ(more[10].at("event").as_string(), "train_begin");
  EXPECT_EQ(more[10].at("step").as_int(), 6);
  EXPECT_EQ(more[11].at("step").as_int(), 7);
  fs::remove(file);
}

// A run killed mid-write leaves a last line without its newline; the resumed run's lines start on a line of
// their own, so only the cut line is malformed.
TEST(EventLog, AppendingAfterACutLineStartsANewLine) {
  const fs::path file = fresh_file();
  const std::string cut = "{\"event\": \"batch\", \"run\": \"r1\", \"epoch\": 0, \"step\": 3, \"lo";
  std::ofstream(file) << cut;
  Sequential m = model();
  auto [x, y] = data(4);
  auto log = std::make_shared<EventLog>(file.string(), EventLogOptions{.run = "r1"});
  m.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0, .callbacks = {log}, .shuffle = false});
  log.reset();
  std::istringstream in(read(file));
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first, cut);
  Config begin;
  ASSERT_NO_THROW(begin = Config::parse_json(second)) << read(file);
  EXPECT_EQ(begin.at("event").as_string(), "train_begin");
  // A file that ends with its newline gets none added: no empty line.
  const std::string whole = read(file);
  ASSERT_EQ(whole.back(), '\n');
  m.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0,
               .callbacks = {std::make_shared<EventLog>(file.string(), EventLogOptions{.run = "r1"})}, .shuffle = false});
  EXPECT_EQ(read(file).find("\n\n"), std::string::npos) << read(file);
  fs::remove(file);
}

// A reader following the file sees only complete lines, the lines of an epoch by its end at the latest, and
// batch lines within flush_seconds even while the epoch goes on.
TEST(EventLog, FlushesWholeLinesAtEpochEndsAndWithinFlushSeconds) {
  const fs::path file = fresh_file();
  Sequential m = model();
  auto [x, y] = data(12);
  auto log = std::make_shared<EventLog>(file.string(), EventLogOptions{.run = "r", .flush_seconds = 0.2});
  std::vector<std::size_t> seen_lines;
  bool partial = false;
  auto follower = std::make_shared<LambdaCallback>(LambdaCallbackOptions{
      .on_epoch_end = [&](int, const Logs&) { seen_lines.push_back(lines(file).size()); },
      .on_train_batch_end =
          [&](std::int64_t batch, const Logs&) {
            const std::string text = read(file);
            partial = partial || (!text.empty() && text.back() != '\n');
            if (batch == 1) std::this_thread::sleep_for(std::chrono::milliseconds(250));
            if (batch == 3) seen_lines.push_back(lines(file).size());
          }});
  // The follower runs after the log in each hook.
  m.fit(x, y, {.epochs = 1, .batch_size = 2, .verbose = 0, .callbacks = {log, follower}, .shuffle = false});
  EXPECT_FALSE(partial);
  ASSERT_EQ(seen_lines.size(), 2u);
  // By batch 3: train_begin (flushed at once) and batches 0..2, written at batch 2 because the 0.25 s pause
  // after batch 1 made that line wait longer than 0.2 s.
  EXPECT_GE(seen_lines[0], 4u);
  // At the epoch's end: train_begin, 6 batches, the epoch line.
  EXPECT_EQ(seen_lines[1], 8u);
  fs::remove(file);
}

TEST(EventLog, BadPathsAndOptionsThrow) {
  EXPECT_THROW(EventLog(""), std::invalid_argument);
  EXPECT_THROW(EventLog("x.jsonl", {.flush_seconds = -1}), std::invalid_argument);
  Sequential m = model();
  auto [x, y] = data(4);
  auto log = std::make_shared<EventLog>("/nonexistent/dir/events.jsonl");
  try {
    m.fit(x, y, {.epochs = 1, .verbose = 0, .callbacks = {log}});
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/events.jsonl"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tower::callbacks
