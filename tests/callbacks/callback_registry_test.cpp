#include "api/callbacks/callback_registry.h"

#include <gtest/gtest.h>

#include "api/callbacks/callbacks.h"
#include "api/callbacks/event_log.h"

namespace tower::callbacks {
namespace {

template <class F>
void expect_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const std::exception& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(CallbackRegistry, BuildsEveryCallbackWithKerasArguments) {
  const auto es = std::dynamic_pointer_cast<EarlyStopping>(callback_from_config(Config::parse_json(
      R"({"class_name": "EarlyStopping", "config": {"monitor": "val_accuracy", "patience": 3, "mode": "max",
          "baseline": 0.5, "restore_best_weights": true, "min_delta": 0.01, "start_from_epoch": 2}})")));
  ASSERT_TRUE(es);
  EXPECT_EQ(es->wait(), 0);

  const auto mc = std::dynamic_pointer_cast<ModelCheckpoint>(callback_from_config(Config::parse_json(
      R"({"class_name": "ModelCheckpoint", "config": {"filepath": "ckpt-{epoch:02d}.weights", "save_freq": 5,
          "save_best_only": true, "monitor": "loss", "initial_value_threshold": 1.5}})")));
  ASSERT_TRUE(mc);
  EXPECT_EQ(mc->best(), 1.5);

  EXPECT_TRUE(std::dynamic_pointer_cast<ReduceLROnPlateau>(callback_from_config(
      Config::parse_json(R"({"class_name": "ReduceLROnPlateau", "config": {"factor": 0.5, "patience": 1}})"))));
  EXPECT_TRUE(std::dynamic_pointer_cast<CSVLogger>(callback_from_config(
      Config::parse_json(R"({"class_name": "CSVLogger", "config": {"filename": "h.csv", "separator": ";"}})"))));
  EXPECT_TRUE(std::dynamic_pointer_cast<BackupAndRestore>(callback_from_config(
      Config::parse_json(R"({"class_name": "BackupAndRestore", "config": {"backup_dir": "b", "save_freq": "epoch"}})"))));
  const auto ev = std::dynamic_pointer_cast<EventLog>(callback_from_config(
      Config::parse_json(R"({"class_name": "EventLog", "config": {"path": "e.jsonl", "run": "x"}})")));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->path(), "e.jsonl");
  EXPECT_TRUE(std::dynamic_pointer_cast<TerminateOnNaN>(callback_from_config(Config("TerminateOnNaN"))));
  const auto live = std::dynamic_pointer_cast<LiveMonitor>(callback_from_config(
      Config::parse_json(R"({"class_name": "LiveMonitor", "config": {"port": 7999, "run": "r"}})")));
  ASSERT_TRUE(live);
  EXPECT_EQ(live->run(), "r");
  EXPECT_EQ(callback_types().size(), 8u);
}

TEST(CallbackRegistry, AcceptsEveryArgumentOfEachCallback) {
  // Each options struct's visit() lists these Keras names; a name missing there is an "unknown argument".
  for (const char* json : {
           R"({"class_name": "EarlyStopping", "config": {"monitor": "loss", "min_delta": 0.1, "patience": 2,
               "verbose": 1, "mode": "min", "baseline": 1.0, "restore_best_weights": true, "start_from_epoch": 1}})",
           R"({"class_name": "ReduceLROnPlateau", "config": {"monitor": "loss", "factor": 0.5, "patience": 2,
               "verbose": 1, "mode": "min", "min_delta": 0.1, "cooldown": 1, "min_lr": 1e-5}})",
           R"({"class_name": "ModelCheckpoint", "config": {"filepath": "m.weights", "monitor": "loss", "verbose": 1,
               "save_best_only": true, "save_weights_only": true, "mode": "min", "save_freq": "epoch",
               "initial_value_threshold": 2.0}})",
           R"({"class_name": "BackupAndRestore", "config": {"backup_dir": "b", "save_freq": 10,
               "delete_checkpoint": false}})",
           R"({"class_name": "CSVLogger", "config": {"filename": "h.csv", "separator": ";", "append": true}})",
           R"({"class_name": "EventLog", "config": {"path": "e.jsonl", "run": "r", "batch_events": false,
               "flush_seconds": 2.0}})",
           R"({"class_name": "LiveMonitor", "config": {"host": "127.0.0.1", "port": 7999, "run": "r",
               "queue_size": 16, "flush_interval": 0.2, "reconnect_interval": 1.0, "close_timeout": 0.5}})"}) {
    SCOPED_TRACE(json);
    EXPECT_TRUE(callback_from_config(Config::parse_json(json)));
  }
}

TEST(CallbackRegistry, ErrorsNameTheCallbackTheArgumentAndTheClosestName) {
  expect_error([] { callback_from_config(Config("EarlyStoping")); },
               {"unknown callback 'EarlyStoping' (did you mean 'EarlyStopping'?)", "known: BackupAndRestore"});
  expect_error([] { callback_from_config(Config::parse_json(R"({"class_name": "EarlyStopping", "config": {"patiense": 1}})")); },
               {"EarlyStopping: unknown argument 'patiense' (did you mean 'patience'?)"});
  expect_error([] { callback_from_config(Config::parse_json(R"({"class_name": "EarlyStopping", "config": {"patience": "x"}})")); },
               {"EarlyStopping: argument 'patience'", "expected an int"});
  expect_error([] { callback_from_config(Config::parse_json(R"({"class_name": "ModelCheckpoint", "config": {}})")); },
               {"ModelCheckpoint: missing required argument 'filepath'"});
  expect_error([] { callback_from_config(Config::parse_json(R"({"class_name": "ModelCheckpoint", "config": {"filepath": "a", "save_freq": 1.5}})")); },
               {"ModelCheckpoint: argument 'save_freq'", "\"epoch\" or a number of batches"});
  expect_error([] { callback_from_config(Config::parse_json(R"({"class_name": "ReduceLROnPlateau", "config": {"factor": 2}})")); },
               {"factor"});
  expect_error([] { callback_from_config(Config("LearningRateScheduler")); }, {"takes C++ functions"});
  expect_error([] { callback_from_config(Config(3)); }, {"a callback is a name or {class_name, config}"});
}

}  // namespace
}  // namespace tower::callbacks
