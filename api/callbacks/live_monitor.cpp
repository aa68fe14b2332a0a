#include "api/callbacks/live_monitor.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "api/io/config.h"
#include "api/models/model.h"

namespace tower::callbacks {

namespace detail {

std::string event_json(const EventContext& context, const Logs& logs) {
  Config line = Config::map();
  line.set("event", context.event);
  line.set("run", context.run);
  line.set("epoch", context.epoch);
  line.set("step", context.step);
  for (const auto& [key, value] : logs.entries())
    if (key != "size") line.set(key, value);
  if (context.examples_per_sec) line.set("examples_per_sec", *context.examples_per_sec);
  if (context.learning_rate) line.set("learning_rate", *context.learning_rate);
  line.set("time", context.time);
  return line.to_json();
}

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace detail

namespace {

std::chrono::nanoseconds seconds(double s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s));
}

}  // namespace

LiveMonitor::LiveMonitor(LiveMonitorOptions options) : options_(std::move(options)), run_(options_.run) {
  in_addr address{};
  if (::inet_pton(AF_INET, options_.host.c_str(), &address) != 1)
    throw std::invalid_argument("LiveMonitor: host \"" + options_.host + "\" is not an IPv4 address such as 127.0.0.1");
  if (options_.port < 1 || options_.port > 65535)
    throw std::invalid_argument("LiveMonitor: port " + std::to_string(options_.port) + " is not in 1..65535");
  if (options_.queue_size < 1)
    throw std::invalid_argument("LiveMonitor: queue_size must be >= 1, got " + std::to_string(options_.queue_size));
  if (!(options_.flush_interval > 0) || !(options_.reconnect_interval > 0) || !(options_.close_timeout >= 0))
    throw std::invalid_argument("LiveMonitor: flush_interval and reconnect_interval must be > 0 and close_timeout >= 0");
  sender_ = std::thread([this] { sender_loop(); });
}

LiveMonitor::~LiveMonitor() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  sender_.join();
}

std::string LiveMonitor::run() const {
  std::lock_guard lock(mutex_);
  return run_;
}

std::optional<double> LiveMonitor::current_learning_rate() const {
  if (!model() || !model()->compiled() || !model()->optimizer()) return std::nullopt;
  return model()->optimizer()->learning_rate();
}

void LiveMonitor::on_train_begin(const Logs&) {
  {
    std::lock_guard lock(mutex_);
    if (run_.empty()) run_ = (model() ? model()->name() : std::string("run")) + "-" + std::to_string(::getpid());
  }
  step_ = model() && model()->compiled() && model()->optimizer()
              ? model()->optimizer()->iterations()
              : 0;
  epoch_ = 0;
  Config line = Config::map();
  line.set("event", "train_begin");
  line.set("run", run_);
  line.set("epoch", 0);
  line.set("step", step_);
  line.set("epochs", params().epochs);
  line.set("steps", params().steps);
  line.set("pid", static_cast<std::int64_t>(::getpid()));
  line.set("time", detail::unix_time());
  enqueue({.line = line.to_json()}, false);
}

void LiveMonitor::on_epoch_begin(int epoch, const Logs&) {
  epoch_ = epoch;
  epoch_examples_ = 0;
  epoch_start_ = last_batch_end_ = Clock::now();
}

void LiveMonitor::on_train_batch_begin(std::int64_t, const Logs&) { step_learning_rate_ = current_learning_rate(); }

void LiveMonitor::on_train_batch_end(std::int64_t, const Logs& logs) {
  const Clock::time_point now = Clock::now();
  const double size = logs.get("size").value_or(0.0);
  const double elapsed = std::chrono::duration<double>(now - last_batch_end_).count();
  last_batch_end_ = now;
  epoch_examples_ += static_cast<std::int64_t>(size);
  ++step_;
  Queued event{.context = {.event = "batch", .epoch = epoch_, .step = step_}, .logs = logs};
  if (elapsed > 0 && size > 0) event.context.examples_per_sec = size / elapsed;
  event.context.learning_rate = step_learning_rate_;
  event.context.time = detail::unix_time();
  enqueue(std::move(event), true);
}

void LiveMonitor::on_epoch_end(int epoch, const Logs& logs) {
  const double elapsed = std::chrono::duration<double>(last_batch_end_ - epoch_start_).count();
  detail::EventContext context{.event = "epoch", .run = run_, .epoch = epoch, .step = step_};
  if (elapsed > 0 && epoch_examples_ > 0) context.examples_per_sec = static_cast<double>(epoch_examples_) / elapsed;
  context.learning_rate = step_learning_rate_ ? step_learning_rate_ : current_learning_rate();
  context.time = detail::unix_time();
  enqueue({.line = detail::event_json(context, logs)}, false);
}

void LiveMonitor::on_train_end(const Logs& logs) {
  const detail::EventContext context{
      .event = "train_end", .run = run_, .epoch = epoch_, .step = step_, .time = detail::unix_time()};
  enqueue({.line = detail::event_json(context, logs)}, false);
}

void LiveMonitor::enqueue(Queued event, bool droppable) {
  std::unique_lock lock(mutex_);
  if (droppable && queued_batches_ >= options_.queue_size) {
    lock.unlock();
    dropped_.fetch_add(1);
    return;
  }
  queue_.push_back(std::move(event));
  if (droppable) ++queued_batches_;
  idle_ = false;
  // Batch events wait for the sender's next round; the rare others go out at once.
  if (!droppable) {
    urgent_ = true;
    lock.unlock();
    wake_.notify_one();
  }
}

bool LiveMonitor::flush(double timeout) {
  std::unique_lock lock(mutex_);
  urgent_ = true;
  wake_.notify_one();
  return drained_.wait_for(lock, seconds(timeout), [this] { return idle_; });
}

void LiveMonitor::sender_loop() {
  Clock::time_point deadline = Clock::time_point::max();
  for (;;) {
    bool stopping;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, seconds(options_.flush_interval), [this] { return stopping_ || urgent_; });
      urgent_ = false;
      stopping = stopping_;
      if (stopping && deadline == Clock::time_point::max()) deadline = Clock::now() + seconds(options_.close_timeout);
    }
    if (fd_ >= 0 && !peer_open()) disconnect();
    if (fd_ < 0 && (Clock::now() >= next_attempt_ || stopping)) try_connect();
    if (fd_ >= 0) {
      for (;;) {
        if (pending_offset_ == pending_.size()) {
          pending_.clear();
          pending_offset_ = 0;
          std::deque<Queued> taken;
          std::string run;
          {
            std::lock_guard lock(mutex_);
            taken.swap(queue_);
            queued_batches_ = 0;
            run = run_;
          }
          for (Queued& event : taken) {
            if (event.line.empty()) {
              event.context.run = run;
              pending_ += detail::event_json(event.context, event.logs);
            } else {
              pending_ += event.line;
            }
            pending_ += '\n';
          }
        }
        if (pending_.empty() || !send_pending() || pending_offset_ < pending_.size()) break;
      }
    }
    {
      std::lock_guard lock(mutex_);
      if (queue_.empty() && pending_.size() == pending_offset_) {
        idle_ = true;
        drained_.notify_all();
      }
      if (stopping && (idle_ || fd_ < 0 || Clock::now() >= deadline)) break;
    }
    if (stopping) {
      // Wait for the socket to take more rather than spinning until the deadline.
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, 10);
    }
  }
  disconnect();
  std::lock_guard lock(mutex_);
  dropped_.fetch_add(static_cast<std::int64_t>(queue_.size()));
  queue_.clear();
}

bool LiveMonitor::try_connect() {
  next_attempt_ = Clock::now() + seconds(options_.reconnect_interval);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(options_.port));
  ::inet_pton(AF_INET, options_.host.c_str(), &address.sin_addr);
  int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t length = sizeof error;
    rc = ::poll(&p, 1, 200) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0 ? 0 : -1;
  }
  if (rc != 0) {
    ::close(fd);
    return false;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fd_ = fd;
  connected_ = true;
  connections_.fetch_add(1);
  return true;
}

bool LiveMonitor::send_pending() {
  while (pending_offset_ < pending_.size()) {
    const ssize_t n = ::send(fd_, pending_.data() + pending_offset_, pending_.size() - pending_offset_,
                             MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent_.fetch_add(std::count(pending_.begin() + static_cast<std::ptrdiff_t>(pending_offset_),
                                 pending_.begin() + static_cast<std::ptrdiff_t>(pending_offset_) + n, '\n'));
      pending_offset_ += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return true;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      disconnect();
      return false;
    }
  }
  return true;
}

// The monitor never writes; a readable socket means it closed the connection (or sent something to ignore).
bool LiveMonitor::peer_open() {
  char buffer[256];
  for (;;) {
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

void LiveMonitor::disconnect() {
  if (fd_ < 0) return;
  // Lines partly or not yet written to the broken connection are lost.
  const std::int64_t lost =
      std::count(pending_.begin() + static_cast<std::ptrdiff_t>(pending_offset_), pending_.end(), '\n');
  dropped_.fetch_add(lost);
  pending_.clear();
  pending_offset_ = 0;
  ::close(fd_);
  fd_ = -1;
  connected_ = false;
  next_attempt_ = Clock::now() + seconds(options_.reconnect_interval);
}

}  // namespace tower::callbacks
