#pragma once
// EventLog: streams training progress to a JSON Lines file ("events.jsonl"), the file the training monitor
// and other tools follow while a run trains. The lines are those LiveMonitor sends (see live_monitor.h for
// the fields; both use detail::event_json), one complete JSON object per line:
//
//   {"event": "train_begin", "run": "cnn", "epoch": 0, "step": 0, "epochs": 15, "steps": 469, "pid": 4242,
//    "time": 1732280000.125}
//   {"event": "batch", "run": "cnn", "epoch": 0, "step": 1, "loss": 2.3012, "sparse_categorical_accuracy": 0.1016,
//    "examples_per_sec": 2950.1, "learning_rate": 0.001, "time": 1732280000.168}
//   {"event": "epoch", "run": "cnn", "epoch": 0, "step": 469, "loss": 0.51, ..., "val_loss": 0.39, ...,
//    "examples_per_sec": 3120.4, "learning_rate": 0.001, "time": 1732280019.4}
//   {"event": "train_end", "run": "cnn", "epoch": 14, "step": 7035, "time": 1732280290.0}
//
// "epoch" is 0-based; "step" is the optimizer's iteration count after the batch, so it keeps counting across a
// resumed run; metric keys are fit()'s log keys (running values over the epoch so far, as Keras reports them).
//
// The file is opened for appending (a resumed run continues it, on a new line when a killed run left its last
// line without one). Lines are buffered and written with whole-line
// writes: at every epoch end, at the end of training, and in between whenever a line would otherwise wait longer
// than `flush_seconds` (judged from the last batch's duration, so slow batches flush every line). A reader
// following the file therefore sees complete lines, apart from a last line still being written, which lacks its
// newline and is never valid JSON on its own (an object is not complete before its closing brace). Throws
// std::runtime_error naming the path when the file cannot be opened or written.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "api/training/callback.h"

namespace tower::callbacks {

struct EventLogOptions {
  std::string run;            // the run's name, written in every event ("" writes "run": "")
  bool batch_events = true;   // false: only train_begin, epoch and train_end events
  double flush_seconds = 1.0;  // the longest time a complete line waits in the buffer
  // The fields by their Keras (and YAML) names, for callbacks::callback_from_config.
  template <class V> void visit(V&& v) {
    v("run", run);
    v("batch_events", batch_events);
    v("flush_seconds", flush_seconds);
  }
};

class EventLog : public Callback {
 public:
  explicit EventLog(std::string path, EventLogOptions options = {});
  ~EventLog() override;
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_begin(std::int64_t batch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  const std::string& path() const { return path_; }
  // Writes the buffered lines now.
  void flush();

 private:
  using Clock = std::chrono::steady_clock;
  void open();
  void emit(const std::string& line);
  std::int64_t step() const;
  std::optional<double> learning_rate() const;

  std::string path_;
  EventLogOptions options_;
  int fd_ = -1;
  std::string buffer_;
  Clock::time_point last_flush_;
  Clock::time_point epoch_start_, last_batch_end_;
  double epoch_examples_ = 0;
  std::optional<double> batch_learning_rate_;
  double last_batch_seconds_ = 0;
  int epoch_ = 0;
};

}  // namespace tower::callbacks
