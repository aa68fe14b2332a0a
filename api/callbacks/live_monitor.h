#pragma once
// LiveMonitor: streams training events to a training monitor (tower-monitor) over a TCP connection on the
// loopback interface, as the JSON lines of events.jsonl:
//
//   {"event": "train_begin", "run", "epoch", "step", "epochs", "steps", "pid", "time"}
//   {"event": "batch", "run", "epoch", "step", "loss", <metric>..., "examples_per_sec", "learning_rate", "time"}
//   {"event": "epoch", "run", "epoch", "step", "loss", <metric>..., "val_loss", "val_<metric>"...,
//    "examples_per_sec", "learning_rate", "time"}
//   {"event": "train_end", "run", "epoch", "step", "time"}
//
// "epoch" is 0-based as in Keras callbacks; "step" counts the optimizer steps completed (the optimizer's
// iterations), so it keeps growing across epochs; "time" is seconds since the Unix epoch. A batch event's
// examples_per_sec is the batch size over the time since the previous batch ended (the epoch's start for the
// first batch), an epoch event's the epoch's examples over the time from its start to its last batch;
// learning_rate is the rate the step used. "pid" lets a reader of the file tell a live trainer from a dead one.
//
// Training never waits for the monitor. on_train_batch_end copies the logs into a queue; a background thread
// formats the lines, connects, sends what is queued every flush_interval seconds in one write, and reconnects
// every reconnect_interval seconds when the monitor is absent or has gone. While the monitor is slow, absent
// or not reading, batch events wait in the queue up to queue_size of them; beyond that new batch events are
// dropped and counted (dropped()). train_begin, epoch and train_end events are never dropped from the queue.
// A connection that breaks loses the lines being sent on it (counted as dropped).
//
// The destructor waits up to close_timeout seconds to deliver what is queued when connected, then closes the
// connection. A monitor tells a run that ended without train_end (the process died, fit() threw) from a
// finished one by the connection closing first.
//
// Throws std::invalid_argument from the constructor for a host that is not an IPv4 address literal, a port
// outside 1..65535, a queue_size < 1 or a non-positive interval.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "api/training/callback.h"

namespace tower::callbacks {

namespace detail {
// What an events.jsonl line says besides the logs.
struct EventContext {
  std::string event;  // "batch", "epoch", "train_begin" or "train_end"
  std::string run;
  int epoch = 0;
  std::int64_t step = 0;
  std::optional<double> examples_per_sec;
  std::optional<double> learning_rate;
  double time = 0;  // seconds since the Unix epoch
};
// One events.jsonl line, without its newline: "event", "run", "epoch", "step", then the logs' entries in
// order ("size" left out), then "examples_per_sec" and "learning_rate" when known, then "time". Non-finite
// values are written as NaN / Infinity / -Infinity, as Python's json module does.
std::string event_json(const EventContext& context, const Logs& logs);
// Seconds since the Unix epoch, now.
double unix_time();
}  // namespace detail

struct LiveMonitorOptions {
  static constexpr int kDefaultPort = 7470;  // tower-monitor listens here by default
  std::string host = "127.0.0.1";
  int port = kDefaultPort;
  std::string run;  // the run's name in every event; empty: "<model name>-<process id>"
  std::int64_t queue_size = 4096;
  double flush_interval = 0.1;
  double reconnect_interval = 0.5;
  double close_timeout = 1.0;
  // The fields by their Keras (and YAML) names, for callbacks::callback_from_config.
  template <class V> void visit(V&& v) {
    v("host", host);
    v("port", port);
    v("run", run);
    v("queue_size", queue_size);
    v("flush_interval", flush_interval);
    v("reconnect_interval", reconnect_interval);
    v("close_timeout", close_timeout);
  }
};

class LiveMonitor : public Callback {
 public:
  explicit LiveMonitor(LiveMonitorOptions options = {});
  ~LiveMonitor() override;
  LiveMonitor(const LiveMonitor&) = delete;
  LiveMonitor& operator=(const LiveMonitor&) = delete;

  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_train_batch_begin(std::int64_t batch, const Logs& logs) override;
  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

  // The run name events carry (known from on_train_begin when the options left it empty).
  std::string run() const;
  // Waits up to `timeout` seconds until every queued event has been written to a connection; returns whether
  // that happened (false when the monitor is absent or not reading). For tests and tools, never called by fit.
  bool flush(double timeout);
  bool connected() const { return connected_.load(); }
  std::int64_t sent() const { return sent_.load(); }        // lines written to a connection
  std::int64_t dropped() const { return dropped_.load(); }  // lines lost to a full queue or a broken connection
  std::int64_t connections() const { return connections_.load(); }  // connections made so far

 private:
  using Clock = std::chrono::steady_clock;

  // A queued event: a formatted line, or for a batch event (formatted by the sender thread, so that the
  // training thread only copies the logs) its context, without the run, and its logs.
  struct Queued {
    std::string line;
    detail::EventContext context;
    Logs logs;
  };
  void enqueue(Queued event, bool droppable);
  void sender_loop();
  // Sender-thread helpers; each returns false when the connection broke (and closes it).
  bool try_connect();
  bool send_pending();
  bool peer_open();
  void disconnect();
  std::optional<double> current_learning_rate() const;

  LiveMonitorOptions options_;
  std::string run_;
  // Training-thread state.
  std::int64_t step_ = 0;
  std::int64_t epoch_examples_ = 0;
  int epoch_ = 0;
  std::optional<double> step_learning_rate_;
  Clock::time_point epoch_start_, last_batch_end_;

  // Shared with the sender thread.
  mutable std::mutex mutex_;
  std::condition_variable wake_, drained_;
  std::deque<Queued> queue_;
  std::int64_t queued_batches_ = 0;
  bool stopping_ = false;
  bool urgent_ = false;  // an event or a flush() that should not wait for the next round
  bool idle_ = true;  // nothing queued and nothing pending on the connection
  std::atomic<bool> connected_{false};
  std::atomic<std::int64_t> sent_{0}, dropped_{0}, connections_{0};

  // Sender-thread state.
  int fd_ = -1;
  std::string pending_;  // whole lines taken from the queue, partly written
  std::size_t pending_offset_ = 0;
  Clock::time_point next_attempt_{};
  std::thread sender_;
};


}  // namespace tower::callbacks
