#include "api/callbacks/event_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "api/callbacks/live_monitor.h"
#include "api/io/config.h"
#include "api/models/model.h"

namespace tower::callbacks {

EventLog::EventLog(std::string path, EventLogOptions options) : path_(std::move(path)), options_(std::move(options)) {
  if (path_.empty()) throw std::invalid_argument("EventLog: the path is empty");
  if (!(options_.flush_seconds >= 0))
    throw std::invalid_argument("EventLog(\"" + path_ + "\"): flush_seconds must be >= 0");
}

EventLog::~EventLog() {
  if (fd_ < 0) return;
  try {
    flush();
  } catch (const std::exception&) {
    // A destructor cannot report a failed write; the next write's error would have named it.
  }
  ::close(fd_);
}

void EventLog::open() {
  if (fd_ >= 0) return;
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("EventLog: cannot open \"" + path_ + "\" for appending: " + std::strerror(errno));
  last_flush_ = Clock::now();
  // A killed run may have left its last line cut short, without a newline: start on a line of our own, so that
  // only the cut line is malformed.
  struct stat st{};
  char last = '\n';
  if (::fstat(fd_, &st) == 0 && st.st_size > 0 && ::pread(fd_, &last, 1, st.st_size - 1) == 1 && last != '\n')
    buffer_.insert(0, 1, '\n');
}

void EventLog::flush() {
  if (fd_ < 0) return;
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      buffer_.erase(0, done);
      throw std::runtime_error("EventLog: cannot write to \"" + path_ + "\": " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(n);
  }
  buffer_.clear();
  last_flush_ = Clock::now();
}

void EventLog::emit(const std::string& line) {
  buffer_ += line;
  buffer_ += '\n';
  // Flushing when the next line would come too late, not only when the buffer is old, keeps a line from waiting
  // behind slow batches.
  const double waited = std::chrono::duration<double>(Clock::now() - last_flush_).count();
  if (waited + last_batch_seconds_ >= options_.flush_seconds) flush();
}

std::int64_t EventLog::step() const {
  ModelImpl* m = model();
  return m && m->compiled() && m->optimizer() ? m->optimizer()->iterations() : 0;
}

std::optional<double> EventLog::learning_rate() const {
  ModelImpl* m = model();
  if (!m || !m->compiled() || !m->optimizer()) return std::nullopt;
  return m->optimizer()->learning_rate();
}

void EventLog::on_train_begin(const Logs&) {
  open();
  Config line = Config::map();
  line.set("event", "train_begin");
  line.set("run", options_.run);
  line.set("epoch", 0);
  line.set("step", step());
  line.set("epochs", params().epochs);
  line.set("steps", params().steps);
  line.set("pid", static_cast<std::int64_t>(::getpid()));
  line.set("time", detail::unix_time());
  emit(line.to_json());
  flush();
}

void EventLog::on_epoch_begin(int epoch, const Logs&) {
  epoch_ = epoch;
  epoch_examples_ = 0;
  epoch_start_ = last_batch_end_ = Clock::now();
}

void EventLog::on_train_batch_begin(std::int64_t, const Logs&) { batch_learning_rate_ = learning_rate(); }

void EventLog::on_train_batch_end(std::int64_t, const Logs& logs) {
  const Clock::time_point now = Clock::now();
  const double size = logs.get("size").value_or(0.0);
  last_batch_seconds_ = std::chrono::duration<double>(now - last_batch_end_).count();
  last_batch_end_ = now;
  epoch_examples_ += size;
  if (!options_.batch_events) return;
  detail::EventContext context{.event = "batch", .run = options_.run, .epoch = epoch_, .step = step()};
  if (last_batch_seconds_ > 0 && size > 0) context.examples_per_sec = size / last_batch_seconds_;
  context.learning_rate = batch_learning_rate_;
  context.time = detail::unix_time();
  emit(detail::event_json(context, logs));
}

void EventLog::on_epoch_end(int epoch, const Logs& logs) {
  const double elapsed = std::chrono::duration<double>(last_batch_end_ - epoch_start_).count();
  detail::EventContext context{.event = "epoch", .run = options_.run, .epoch = epoch, .step = step()};
  if (elapsed > 0 && epoch_examples_ > 0) context.examples_per_sec = epoch_examples_ / elapsed;
  context.learning_rate = batch_learning_rate_ ? batch_learning_rate_ : learning_rate();
  context.time = detail::unix_time();
  emit(detail::event_json(context, logs));
  flush();
}

void EventLog::on_train_end(const Logs& logs) {
  const detail::EventContext context{
      .event = "train_end", .run = options_.run, .epoch = epoch_, .step = step(), .time = detail::unix_time()};
  emit(detail::event_json(context, logs));
  flush();
}

}  // namespace tower::callbacks
