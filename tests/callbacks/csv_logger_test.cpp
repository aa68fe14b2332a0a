#include "api/callbacks/csv_logger.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "api/losses/mean_squared_error.h"
#include "api/models/model.h"
#include "api/optimizers/sgd.h"
#include "layers/dense.h"

namespace tower::callbacks {
namespace {

namespace fs = std::filesystem;

fs::path fresh_file() {
  const fs::path p = fs::temp_directory_path() /
                     ("tower_csv_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                      "_" + std::to_string(::getpid()) + ".csv");
  fs::remove(p);
  return p;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Logs logs_of(std::vector<std::pair<std::string, double>> values) {
  Logs logs;
  for (const auto& [k, v] : values) logs.set(k, v);
  return logs;
}

TEST(CSVLogger, WritesSortedKeysOneRowPerEpochAndFlushes) {
  const fs::path file = fresh_file();
  CSVLogger cb(file.string());
  cb.on_train_begin(Logs());
  cb.on_epoch_end(0, logs_of({{"loss", 1.0}, {"accuracy", 0.5}, {"val_loss", 2.0}, {"val_accuracy", 0.25}}));
  // Flushed at once: readable before training ends.
  EXPECT_EQ(read(file), "epoch,accuracy,loss,val_accuracy,val_loss\n0,0.5,1.0,0.25,2.0\n");
  cb.on_epoch_end(1, logs_of({{"loss", 0.1}, {"accuracy", 0.75}, {"val_loss", 0.2}, {"val_accuracy", 0.5}}));
  cb.on_train_end(Logs());
  EXPECT_EQ(read(file), "epoch,accuracy,loss,val_accuracy,val_loss\n0,0.5,1.0,0.25,2.0\n1,0.75,0.1,0.5,0.2\n");
  fs::remove(file);
}

TEST(CSVLogger, AddsValidationColumnsAndWritesNAForMissingValues) {
  const fs::path file = fresh_file();
  CSVLogger cb(file.string(), ";");
  cb.on_train_begin(Logs());
  cb.on_epoch_end(0, logs_of({{"loss", 1.0}}));  // validation only every other epoch
  cb.on_epoch_end(1, logs_of({{"loss", 0.5}, {"val_loss", 0.75}}));
  cb.on_train_end(Logs());
  EXPECT_EQ(read(file), "epoch;loss;val_loss\n0;1.0;NA\n1;0.5;0.75\n");
  fs::remove(file);
}

TEST(CSVLogger, AppendKeepsTheOldRowsAndWritesNoSecondHeader) {
  const fs::path file = fresh_file();
  CSVLogger first(file.string());
  first.on_train_begin(Logs());
  first.on_epoch_end(0, logs_of({{"loss", 1.0}, {"val_loss", 2.0}}));
  first.on_train_end(Logs());
  CSVLogger appending(file.string(), ",", true);
  appending.on_train_begin(Logs());
  appending.on_epoch_end(1, logs_of({{"loss", 0.5}, {"val_loss", 1.5}}));
  appending.on_train_end(Logs());
  EXPECT_EQ(read(file), "epoch,loss,val_loss\n0,1.0,2.0\n1,0.5,1.5\n");
  CSVLogger overwriting(file.string());
  overwriting.on_train_begin(Logs());
  overwriting.on_epoch_end(0, logs_of({{"loss", 3.0}, {"val_loss", 4.0}}));
  overwriting.on_train_end(Logs());
  EXPECT_EQ(read(file), "epoch,loss,val_loss\n0,3.0,4.0\n");
  fs::remove(file);
}

TEST(CSVLogger, AppendToAMissingFileWritesTheHeader) {
  const fs::path file = fresh_file();
  CSVLogger cb(file.string(), ",", true);
  cb.on_train_begin(Logs());
  cb.on_epoch_end(0, logs_of({{"loss", 1.0}, {"val_loss", 2.0}}));
  cb.on_train_end(Logs());
  EXPECT_EQ(read(file), "epoch,loss,val_loss\n0,1.0,2.0\n");
  fs::remove(file);
}

TEST(CSVLogger, AnUnwritablePathThrowsNamingIt) {
  CSVLogger cb("/nonexistent-dir-for-tower/log.csv");
  try {
    cb.on_train_begin(Logs());
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-for-tower/log.csv"), std::string::npos) << e.what();
  }
}

TEST(CSVLogger, LogsAFit) {
  const fs::path file = fresh_file();
  Sequential m({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  m.compile(optimizers::SGD(0.1), losses::MeanSquaredError());
  const Tensor x = Tensor::full({8, 3}, 1.f), y = Tensor::full({8, 2}, 0.f);
  History h = m.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0,
                           .callbacks = {std::make_shared<CSVLogger>(file.string())}});
  std::istringstream lines(read(file));
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "epoch,loss,val_loss");
  for (int e = 0; e < 3; ++e) {
    ASSERT_TRUE(std::getline(lines, line));
    EXPECT_EQ(line.substr(0, 2), std::to_string(e) + ",");
    EXPECT_NEAR(std::stod(line.substr(2)), h["loss"][static_cast<std::size_t>(e)], 1e-12);
    EXPECT_EQ(line.substr(line.size() - 3), ",NA");
  }
  EXPECT_FALSE(std::getline(lines, line));
  fs::remove(file);
}

}  // namespace
}  // namespace tower::callbacks
