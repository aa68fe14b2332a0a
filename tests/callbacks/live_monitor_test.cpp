#include "api/callbacks/live_monitor.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "api/io/config.h"
#include "api/losses/mean_squared_error.h"
#include "api/metrics/regression_metrics.h"
#include "api/models/model.h"
#include "api/optimizers/sgd.h"
#include "layers/dense.h"

namespace tower::callbacks {
namespace {

using Clock = std::chrono::steady_clock;

// A monitor stand-in: a loopback TCP listener whose connections the test reads (or leaves unread).
class LoopbackServer {
 public:
  // Port 0 picks a free one.
  explicit LoopbackServer(int port = 0) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 4) != 0)
      throw std::runtime_error("LoopbackServer: cannot listen on port " + std::to_string(port));
    socklen_t length = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &length);
    port_ = ntohs(a.sin_port);
  }
  ~LoopbackServer() {
    close_connection();
    ::close(listen_fd_);
  }
  int port() const { return port_; }

  // Accepts one connection; false after `timeout` seconds without one.
  bool accept(double timeout = 5) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout * 1000)) != 1) return false;
    close_connection();
    fd_ = ::accept(listen_fd_, nullptr, nullptr);
    return fd_ >= 0;
  }
  void close_connection() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buffer_.clear();
  }
  // Reads until `count` whole lines have arrived, the peer closes, or `timeout` seconds pass.
  std::vector<std::string> read_lines(std::size_t count, double timeout = 5) {
    std::vector<std::string> lines;
    const Clock::time_point end = Clock::now() + std::chrono::milliseconds(static_cast<int>(timeout * 1000));
    while (lines.size() < count && Clock::now() < end) {
      for (std::size_t nl; lines.size() < count && (nl = buffer_.find('\n')) != std::string::npos;) {
        lines.push_back(buffer_.substr(0, nl));
        buffer_.erase(0, nl + 1);
      }
      if (lines.size() == count) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
    return lines;
  }

 private:
  int listen_fd_ = -1, fd_ = -1, port_ = 0;
  std::string buffer_;
};

// A port nothing listens on (free a moment ago).
int unused_port() { return LoopbackServer().port(); }

Logs batch_logs(double loss, double size = 4) {
  Logs logs;
  logs.set("loss", loss);
  logs.set("size", size);
  return logs;
}

std::vector<Config> parse(const std::vector<std::string>& lines) {
  std::vector<Config> events;
  for (const std::string& line : lines) events.push_back(Config::parse_json(line));
  return events;
}

TEST(LiveMonitor, EventJsonWritesTheContextThenTheLogsWithoutSize) {
  Logs logs;
  logs.set("loss", 0.5);
  logs.set("size", 32);
  logs.set("mean_absolute_error", 0.25);
  const detail::EventContext context{.event = "batch", .run = "r1", .epoch = 2, .step = 17,
                                     .examples_per_sec = 1000.0, .learning_rate = 0.125, .time = 1.5e9};
  EXPECT_EQ(detail::event_json(context, logs),
            "{\"event\": \"batch\", \"run\": \"r1\", \"epoch\": 2, \"step\": 17, \"loss\": 0.5, "
            "\"mean_absolute_error\": 0.25, \"examples_per_sec\": 1000.0, \"learning_rate\": 0.125, "
            "\"time\": 1500000000.0}");
  Logs diverged;
  diverged.set("loss", std::nan(""));
  EXPECT_EQ(detail::event_json({.event = "epoch", .run = "r", .epoch = 0, .step = 1, .time = 2}, diverged),
            "{\"event\": \"epoch\", \"run\": \"r\", \"epoch\": 0, \"step\": 1, \"loss\": NaN, \"time\": 2.0}");
}

TEST(LiveMonitor, StreamsEveryEventOfAFitInOrderWithTheValuesFitReports) {
  LoopbackServer server;
  auto monitor = std::make_shared<LiveMonitor>(LiveMonitorOptions{.port = server.port(), .run = "fit-run"});
  set_random_seed(3);
  Sequential model({InputLayer({.shape = {3}}), layers::Dense({.units = 2})});
  model.compile(optimizers::SGD(0.05), losses::MeanSquaredError(), {metrics::MeanAbsoluteError()});
  Generator g(7);
  std::vector<float> x(12 * 3), y(12 * 2);
  for (float& v : x) v = g.uniform(-1.f, 1.f);
  for (float& v : y) v = g.uniform(-1.f, 1.f);
  const Tensor xs = Tensor::from_vector(x, {12, 3}), ys = Tensor::from_vector(y, {12, 2});
  ASSERT_TRUE(server.accept());
  const History history = model.fit(xs, ys, {.epochs = 2, .batch_size = 4, .verbose = 0, .callbacks = {monitor},
                                            .validation_split = 0.25, .shuffle = false});
  ASSERT_TRUE(monitor->flush(5));

  const std::vector<Config> events = parse(server.read_lines(10));
  ASSERT_EQ(events.size(), 10u);  // train_begin, 3 batches, epoch, 3 batches, epoch, train_end (9 train rows)
  const std::vector<std::string> kinds = {"train_begin", "batch", "batch", "batch", "epoch",
                                          "batch",       "batch", "batch", "epoch", "train_end"};
  for (std::size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].at("event").as_string(), kinds[i]) << "event " << i;
    EXPECT_EQ(events[i].at("run").as_string(), "fit-run");
    EXPECT_GT(events[i].at("time").as_double(), 1.6e9);
  }
  EXPECT_EQ(events[0].at("epochs").as_int(), 2);
  EXPECT_EQ(events[0].at("steps").as_int(), 3);
  EXPECT_EQ(events[0].at("pid").as_int(), ::getpid());
  const std::vector<int> steps = {0, 1, 2, 3, 3, 4, 5, 6, 6, 6};
  const std::vector<int> epochs = {0, 0, 0, 0, 0, 1, 1, 1, 1, 1};
  for (std::size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].at("step").as_int(), steps[i]) << "event " << i;
    EXPECT_EQ(events[i].at("epoch").as_int(), epochs[i]) << "event " << i;
  }
  for (std::size_t i : {1, 2, 3, 5, 6, 7}) {
    EXPECT_FALSE(events[i].contains("size"));
    EXPECT_FALSE(events[i].contains("val_loss"));
    EXPECT_DOUBLE_EQ(events[i].at("learning_rate").as_double(), 0.05);
    EXPECT_GT(events[i].at("examples_per_sec").as_double(), 0.0);
    EXPECT_TRUE(events[i].contains("mean_absolute_error"));
  }
  // The epoch events carry what History records, to the last bit.
  for (std::size_t e = 0; e < 2; ++e) {
    const Config& epoch = events[e == 0 ? 4 : 8];
    for (const char* key : {"loss", "mean_absolute_error", "val_loss", "val_mean_absolute_error"})
      EXPECT_EQ(epoch.at(key).as_double(), history[key][e]) << key << " epoch " << e;
    EXPECT_GT(epoch.at("examples_per_sec").as_double(), 0.0);
    // The last batch's running loss is the epoch's loss.
    EXPECT_EQ(events[e == 0 ? 3 : 7].at("loss").as_double(), history["loss"][e]);
  }
  EXPECT_EQ(monitor->sent(), 10);
  EXPECT_EQ(monitor->dropped(), 0);
  EXPECT_EQ(monitor->connections(), 1);
}

TEST(LiveMonitor, WithoutAMonitorKeepsQueueSizeBatchEventsDropsTheRestAndDeliversThemOnceOneListens) {
  const int port = unused_port();
  LiveMonitor monitor({.port = port, .run = "late", .queue_size = 5, .reconnect_interval = 0.05});
  monitor.on_train_begin(Logs());
  monitor.on_epoch_begin(0, Logs());
  for (int i = 0; i < 20; ++i) {
    monitor.on_train_batch_begin(i, Logs());
    monitor.on_train_batch_end(i, batch_logs(20 - i));
  }
  monitor.on_epoch_end(0, batch_logs(1));
  EXPECT_FALSE(monitor.flush(0.2));
  EXPECT_FALSE(monitor.connected());
  EXPECT_EQ(monitor.dropped(), 15);
  EXPECT_EQ(monitor.sent(), 0);

  LoopbackServer server(port);
  ASSERT_TRUE(server.accept());
  ASSERT_TRUE(monitor.flush(5));
  const std::vector<Config> events = parse(server.read_lines(7));
  ASSERT_EQ(events.size(), 7u);
  EXPECT_EQ(events[0].at("event").as_string(), "train_begin");
  // The first five batches were kept, the later fifteen dropped; the epoch event is never dropped.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(events[1 + i].at("event").as_string(), "batch");
    EXPECT_EQ(events[1 + i].at("step").as_int(), i + 1);
    EXPECT_EQ(events[1 + i].at("loss").as_double(), 20 - i);
  }
  EXPECT_EQ(events[6].at("event").as_string(), "epoch");
  EXPECT_EQ(events[6].at("step").as_int(), 20);
  EXPECT_EQ(monitor.sent(), 7);
}

TEST(LiveMonitor, AMonitorThatNeverReadsNeverBlocksTrainingAndTheDestructorGivesUpAfterCloseTimeout) {
  LoopbackServer server;
  auto monitor = std::make_unique<LiveMonitor>(
      LiveMonitorOptions{.port = server.port(), .run = std::string(200, 'r'), .queue_size = 1000,
                         .flush_interval = 0.01, .close_timeout = 0.3});
  ASSERT_TRUE(server.accept());  // accepted, never read
  monitor->on_train_begin(Logs());
  monitor->on_epoch_begin(0, Logs());
  // About 60 MB of lines: far more than the socket buffers take.
  const int batches = 200000;
  double slowest = 0;
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < batches; ++i) {
    const Clock::time_point t = Clock::now();
    monitor->on_train_batch_end(i, batch_logs(i));
    slowest = std::max(slowest, std::chrono::duration<double>(Clock::now() - t).count());
  }
  const double total = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_TRUE(monitor->connected());
  EXPECT_GT(monitor->dropped(), 0);
  EXPECT_LT(monitor->sent(), batches);
  // A few microseconds per call; the bounds leave room for a loaded machine.
  EXPECT_LT(total / batches, 20e-6) << "mean seconds per on_train_batch_end";
  EXPECT_LT(slowest, 0.25) << "slowest on_train_batch_end, seconds";
  monitor->on_train_end(Logs());
  const Clock::time_point closing = Clock::now();
  monitor.reset();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - closing).count(), 0.3 + 0.5);
}

TEST(LiveMonitor, ReconnectsWhenTheMonitorRestarts) {
  auto server = std::make_unique<LoopbackServer>();
  const int port = server->port();
  LiveMonitor monitor({.port = port, .run = "again", .flush_interval = 0.01, .reconnect_interval = 0.05});
  ASSERT_TRUE(server->accept());
  monitor.on_train_begin(Logs());
  ASSERT_TRUE(monitor.flush(5));
  ASSERT_EQ(server->read_lines(1).size(), 1u);
  server.reset();  // the monitor goes away
  for (int i = 0; i < 100 && monitor.connected(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(monitor.connected());

  server = std::make_unique<LoopbackServer>(port);
  ASSERT_TRUE(server->accept());
  monitor.on_epoch_begin(0, Logs());
  monitor.on_train_batch_end(0, batch_logs(0.75));
  ASSERT_TRUE(monitor.flush(5));
  const std::vector<Config> events = parse(server->read_lines(1));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].at("event").as_string(), "batch");
  EXPECT_EQ(events[0].at("loss").as_double(), 0.75);
  EXPECT_EQ(monitor.connections(), 2);
}

TEST(LiveMonitor, RejectsBadOptions) {
  EXPECT_THROW(LiveMonitor({.host = "localhost"}), std::invalid_argument);
  EXPECT_THROW(LiveMonitor({.port = 0}), std::invalid_argument);
  EXPECT_THROW(LiveMonitor({.port = 70000}), std::invalid_argument);
  EXPECT_THROW(LiveMonitor({.queue_size = 0}), std::invalid_argument);
  EXPECT_THROW(LiveMonitor({.flush_interval = 0}), std::invalid_argument);
}

TEST(LiveMonitor, NamesTheRunAfterTheModelAndProcessWhenNoNameIsGiven) {
  Sequential model({InputLayer({.shape = {3}}), layers::Dense({.units = 2})}, "my_model");
  LiveMonitor monitor({.port = unused_port()});
  monitor.set_model(&model.impl());
  monitor.on_train_begin(Logs());
  EXPECT_EQ(monitor.run(), "my_model-" + std::to_string(::getpid()));
}

}  // namespace
}  // namespace tower::callbacks
