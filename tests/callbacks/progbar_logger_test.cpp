#include "api/training/progbar_logger.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace tower::callbacks {
namespace {

Logs logs_of(std::vector<std::pair<std::string, double>> values) {
  Logs logs;
  for (const auto& [k, v] : values) logs.set(k, v);
  return logs;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// One fit of `epochs` epochs of `steps` batches, with a validation pass inside each epoch.
void drive_fit(ProgbarLogger& cb, int epochs, std::int64_t steps, int verbose) {
  cb.set_params({.epochs = epochs, .steps = steps, .verbose = verbose});
  cb.on_train_begin(Logs());
  for (int e = 0; e < epochs; ++e) {
    cb.on_epoch_begin(e, Logs());
    for (std::int64_t b = 0; b < 3; ++b) {
      cb.on_train_batch_begin(b, Logs());
      cb.on_train_batch_end(b, logs_of({{"loss", 0.5}, {"mean_absolute_error", 0.25}, {"size", 32}}));
    }
    cb.on_test_begin(Logs());
    cb.on_test_batch_end(0, logs_of({{"loss", 0.125}, {"size", 32}}));
    cb.on_test_end(logs_of({{"loss", 0.125}}));
    cb.on_epoch_end(e, logs_of({{"loss", 0.5}, {"mean_absolute_error", 0.25}, {"val_loss", 0.125}}));
  }
  cb.on_train_end(Logs());
}

const std::string kTime = R"(\d+(s|:\d\d))";
const std::string kStep = R"(\d+(us|ms|s)/step)";
const std::string kRate = R"(( - \d+ examples/s)?)";

TEST(ProgbarLogger, NotATerminalPrintsOneLinePerEpochWithTheFinalValues) {
  std::ostringstream out;
  ProgbarLogger cb(&out);
  drive_fit(cb, 2, 3, 1);
  const std::string text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_EQ(lines.size(), 4u) << text;
  EXPECT_EQ(lines[0], "Epoch 1/2");
  EXPECT_EQ(lines[2], "Epoch 2/2");
  const std::regex bar("3/3 \\[={30}\\] - " + kTime + " - " + kStep + kRate +
                       " - loss: 0\\.5000 - mean_absolute_error: 0\\.2500 - val_loss: 0\\.1250");
  EXPECT_TRUE(std::regex_match(lines[1], bar)) << lines[1];
  EXPECT_TRUE(std::regex_match(lines[3], bar)) << lines[3];
}

TEST(ProgbarLogger, VerboseTwoPrintsOneLinePerEpochWithoutABar) {
  std::ostringstream out;
  ProgbarLogger cb(&out);
  cb.set_dynamic_display(true);  // even on a terminal
  drive_fit(cb, 1, 3, 2);
  const std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 1u) << out.str();  // a single epoch has no "Epoch 1/1" header, as Keras
  EXPECT_TRUE(std::regex_match(lines[0], std::regex("3/3 - " + kTime + " - " + kStep + kRate +
                                                    " - loss: 0\\.5000 - mean_absolute_error: 0\\.2500 - "
                                                    "val_loss: 0\\.1250")))
      << lines[0];
}

TEST(ProgbarLogger, VerboseZeroPrintsNothing) {
  std::ostringstream out;
  ProgbarLogger cb(&out);
  drive_fit(cb, 2, 3, 0);
  EXPECT_EQ(out.str(), "");
}

TEST(ProgbarLogger, ATerminalGetsABarRedrawnInPlace) {
  std::ostringstream out;
  ProgbarLogger cb(&out);
  cb.set_dynamic_display(true);
  drive_fit(cb, 1, 3, 1);
  const std::string text = out.str();
  // The first batch is drawn at once; later ones within 0.05 s are skipped; the end is always drawn.
  EXPECT_EQ(text.rfind("\r1/3 [=========>....................] - ETA: ", 0), 0u) << text;
  const std::size_t last = text.rfind('\r');
  ASSERT_NE(last, 0u) << text;
  EXPECT_TRUE(std::regex_match(text.substr(last + 1),
                               std::regex("3/3 \\[={30}\\] - " + kTime + " - " + kStep + kRate +
                                          " - loss: 0\\.5000 - mean_absolute_error: 0\\.2500 - val_loss: "
                                          "0\\.1250 *\n")))
      << text;
}

TEST(ProgbarLogger, EvaluateDrawsItsOwnBar) {
  std::ostringstream out;
  ProgbarLogger cb(&out);
  cb.set_params({.steps = 4, .verbose = 1});
  cb.on_test_begin(Logs());
  for (std::int64_t b = 0; b < 4; ++b) cb.on_test_batch_end(b, logs_of({{"loss", 2e-5}, {"size", 8}}));
  cb.on_test_end(logs_of({{"loss", 2e-5}}));
  const std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 1u) << out.str();
  EXPECT_TRUE(std::regex_match(lines[0], std::regex("4/4 \\[={30}\\] - " + kTime + " - " + kStep + kRate +
                                                    " - loss: 2\\.0000e-05")))
      << lines[0];
}

TEST(ProgbarLogger, UnknownStepsEndWithTheCountSeen) {
  std::ostringstream out;
  ProgbarLogger cb(&out);
  drive_fit(cb, 1, -1, 1);
  const std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 1u) << out.str();
  EXPECT_EQ(lines[0].rfind("3/3 [==============================] - ", 0), 0u) << lines[0];
}

TEST(ProgbarLogger, PredictShowsProgressWithoutValues) {
  std::ostringstream out;
  ProgbarLogger cb(&out);
  cb.set_params({.steps = 2, .verbose = 1});
  cb.on_predict_begin(Logs());
  for (std::int64_t b = 0; b < 2; ++b) cb.on_predict_batch_end(b, logs_of({{"size", 8}}));
  cb.on_predict_end(Logs());
  const std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 1u) << out.str();
  EXPECT_TRUE(std::regex_match(lines[0], std::regex("2/2 \\[={30}\\] - " + kTime + " - " + kStep + kRate)))
      << lines[0];
}

// A diverged run: the values print as "nan" / "inf" (never "-nan"), and the first non-finite batch value of a
// fit brings one warning naming its epoch and batch (1-based), whatever comes after.
TEST(ProgbarLogger, ANaNLossPrintsAsNanWithOneWarningNamingWhereItAppeared) {
  for (const int verbose : {1, 2}) {
    std::ostringstream out;
    ProgbarLogger cb(&out);
    cb.set_params({.epochs = 3, .steps = 3, .verbose = verbose});
    cb.on_train_begin(Logs());
    for (int e = 0; e < 3; ++e) {
      cb.on_epoch_begin(e, Logs());
      for (std::int64_t b = 0; b < 3; ++b) {
        const double loss = e == 0 || (e == 1 && b == 0) ? 0.5 : e == 1 && b == 1 ? -std::nan("") : INFINITY;
        cb.on_train_batch_end(b, logs_of({{"loss", loss}, {"size", 32}}));
      }
      cb.on_epoch_end(e, logs_of({{"loss", e == 0 ? 0.5 : -std::nan("")}}));
    }
    cb.on_train_end(Logs());
    const std::string text = out.str();
    const std::vector<std::string> lines = lines_of(text);
    ASSERT_EQ(lines.size(), 7u) << text;
    EXPECT_EQ(lines[3],
              "Warning: loss is nan at epoch 2, batch 2 (the first non-finite value seen): the training diverged. Lower "
              "the learning rate, or add TerminateOnNaN to stop at the first invalid loss.");
    EXPECT_TRUE(std::regex_search(lines[4], std::regex(" - loss: nan$"))) << lines[4];
    EXPECT_EQ(text.find("-nan"), std::string::npos) << text;
    EXPECT_EQ(text.find("Warning", text.find("Warning") + 1), std::string::npos) << text;
  }
  // An infinite value is named as such; verbose 0 stays silent.
  std::ostringstream out;
  ProgbarLogger cb(&out);
  cb.set_params({.epochs = 1, .steps = 1, .verbose = 2});
  cb.on_train_begin(Logs());
  cb.on_epoch_begin(0, Logs());
  cb.on_train_batch_end(0, logs_of({{"loss", 1.0}, {"mean_absolute_error", -INFINITY}}));
  EXPECT_EQ(out.str().rfind("Warning: mean_absolute_error is -inf at epoch 1, batch 1 ", 0), 0u) << out.str();
  std::ostringstream quiet;
  ProgbarLogger silent(&quiet);
  drive_fit(silent, 1, 3, 0);
  silent.on_train_batch_end(0, logs_of({{"loss", std::nan("")}}));
  EXPECT_EQ(quiet.str(), "");
}

}  // namespace
}  // namespace tower::callbacks
