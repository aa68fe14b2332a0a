#pragma once
// ProgbarLogger (Keras): the progress display of fit(), evaluate() and predict(), driven by params().verbose:
//   1  on a terminal, a bar redrawn in place with '\r' at most every 0.05 s:
//        " 7/32 [======>.......................] - ETA: 2s - 12ms/step - 2667 examples/s - loss: 0.1234 - ..."
//      elsewhere (a file, a pipe, a string stream) only the final line of each bar, so logs stay readable:
//        "32/32 [==============================] - 1s - 12ms/step - 2667 examples/s - loss: 0.1234 - val_loss: ..."
//   2  one line per epoch without the bar: "32/32 - 1s - 12ms/step - ... - loss: 0.1234 - val_loss: ...";
//   0  nothing.
// fit() prints "Epoch i/n" before each epoch when there is more than one. The step time leaves out the first
// step (warm-up) as Keras does; examples/s counts the batches' "size" over the elapsed time; values print
// with 4 decimals, or in scientific notation at or below 1e-3. Inside fit() the test hooks belong to
// validation and print nothing; outside fit (evaluate) they draw their own bar. With unknown steps (-1) the
// bar shows "n/Unknown" until the first epoch ends, whose count becomes the target of the next epochs.
// A NaN or infinite value prints as "nan" / "inf" ("loss: nan"); the first one of a fit's training batches also
// prints, once, "Warning: loss is nan at epoch E, batch B (the first non-finite value seen): the training diverged.
// ..." (E and B 1-based), whatever the verbosity above 0. Values are looked at only when they are on the host
// anyway (a redraw, another callback that read them, the epoch's end), so B is the batch where the value was
// first seen, which on a GPU can be later than the batch that made it.
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "api/training/callback.h"

namespace tower::callbacks {

class ProgbarLogger : public Callback {
 public:
  // out: where to write; nullptr means std::cout (then '\r' redraws only when stdout is a terminal).
  explicit ProgbarLogger(std::ostream* out = nullptr);
  // Overrides terminal detection (tests; a non-std::cout stream is never treated as a terminal otherwise).
  void set_dynamic_display(bool dynamic) { dynamic_ = dynamic; }

  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_begin(const Logs& logs) override;
  void on_predict_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;

 private:
  using Clock = std::chrono::steady_clock;
  void start_bar(std::int64_t target);
  // Draws the bar at `current` steps; `finalize` is the last update of the bar.
  void update(std::int64_t current, const Logs& logs, bool finalize);
  // Seconds per step so far, leaving out the first step once there are others (as Keras).
  double step_seconds(std::int64_t current, Clock::time_point now);
  // The one-time warning for the first NaN or infinite value of a training batch's logs.
  void warn_if_non_finite(std::int64_t batch, const Logs& logs);
  std::ostream& out() const;

  std::ostream* out_;
  bool dynamic_ = false;
  bool in_fit_ = false;
  int verbose_ = 1;
  int epochs_ = 1;
  std::int64_t target_ = -1;   // steps in the bar, -1 when unknown
  std::int64_t seen_ = 0;      // steps done in the current bar
  std::int64_t learned_steps_ = -1;  // steps of the last epoch, the target when params().steps is unknown
  Clock::time_point start_;
  Clock::time_point last_update_;
  std::optional<Clock::time_point> after_first_step_;
  bool drawn_ = false;         // something drawn since start_bar
  std::size_t prev_width_ = 0; // length of the last dynamic line
  double examples_ = 0;        // examples seen in the current bar (from "size")
  int epoch_ = 0;
  bool warned_non_finite_ = false;  // in this fit
};

}  // namespace tower::callbacks
