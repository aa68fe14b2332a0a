// What the training monitor costs: examples/sec of the same model, data and seed trained
//   none     without a LiveMonitor
//   reading  with a LiveMonitor sending to a monitor that reads every event (a child process that reads and
//            discards)
//   gui      the same, to the real tower-monitor (drawing every update) listening on --monitor-port, if given
//   stalled  with a LiveMonitor sending to a "monitor" that accepted the connection and has long stopped
//            reading: before fit, events are sent until the socket buffers and the LiveMonitor's queue are full,
//            so every batch event of the run is formatted and dropped
//   absent   with a LiveMonitor and nothing listening (it keeps retrying the connection)
// Configurations are interleaved: `rounds` rounds, each running every configuration once in a rotated order,
// so that a slow spell of a noisy machine hits them all alike. Each run is a fresh model from the same seed,
// `steps` batches of 128 Fashion-MNIST images; examples/sec is timed from the end of batch 10 to the last,
// and so is the process's CPU time (all threads) per example, and the time the LiveMonitor's batch hooks take
// on the training thread. Prints a JSON line per run, then per configuration the median examples/sec, the
// median over rounds of its ratio to "none" in the same round, the same ratio of CPU time per example, and
// the median share of the step time spent in the LiveMonitor's hooks (a bound on its cost to the training
// thread that a noisy machine does not blur).
// In segment mode the configurations take turns within one fit instead (see run_segments); per configuration it
// prints the median ratio to the neighbouring "none" segments, its quartiles, and the mean ratio with its 95%
// confidence interval.
//   bench_monitor mlp|convnet runs ROUNDS STEPS [--monitor-port P]
//   bench_monitor mlp|convnet segments CYCLES SEGMENT_STEPS [--monitor-port P]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <tower/tower.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace tower;

namespace {

using Clock = std::chrono::steady_clock;

// `receive_buffer` > 0 shrinks the buffer of the connections accepted later.
int listen_on_loopback(int* port, int receive_buffer = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (receive_buffer > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length) != 0) {
    std::perror("bench_monitor: listen");
    std::exit(1);
  }
  *port = ntohs(a.sin_port);
  return fd;
}

// The stand-in monitors, in a child process started before any training thread exists: connections to
// `reading` are read to the end, connections to `stalled` are accepted and never read.
pid_t start_monitors(int reading, int stalled) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  std::vector<pollfd> fds = {{reading, POLLIN, 0}, {stalled, POLLIN, 0}};
  std::vector<int> held;
  static char buffer[1 << 16];
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (i < 2) {
        const int c = ::accept(fds[i].fd, nullptr, nullptr);
        if (c < 0) continue;
        if (i == 0) fds.push_back({c, POLLIN, 0});
        else held.push_back(c);
      } else if (::read(fds[i].fd, buffer, sizeof buffer) <= 0) {
        ::close(fds[i].fd);
        fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i--));
      }
    }
  }
}

Sequential make_model(const std::string& which) {
  set_random_seed(1);
  Sequential model({InputLayer({.shape = {28, 28, 1}})});
  if (which == "mlp") {
    model.add(layers::Flatten());
    model.add(layers::Dense({.units = 256, .activation = "relu"}));
    model.add(layers::Dense({.units = 256, .activation = "relu"}));
  } else {
    model.add(layers::Conv2D({.filters = 32, .kernel_size = 3, .activation = "relu"}));
    model.add(layers::MaxPooling2D());
    model.add(layers::Conv2D({.filters = 64, .kernel_size = 3, .activation = "relu"}));
    model.add(layers::MaxPooling2D());
    model.add(layers::Flatten());
    model.add(layers::Dropout({.rate = 0.5}));
  }
  model.add(layers::Dense({.units = 10, .activation = "softmax"}));
  model.compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy(),
                {metrics::SparseCategoricalAccuracy()});
  return model;
}

double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Result {
  double examples_per_sec = 0;
  double cpu_per_example = 0;   // seconds
  double hook_per_batch = 0;    // seconds in the LiveMonitor's batch hooks
  double step_seconds = 0;      // wall time per batch
  std::int64_t sent = 0, dropped = 0;
};

// Forwards to a LiveMonitor and adds up the time its batch hooks take on the training thread.
class TimedMonitor : public callbacks::Callback {
 public:
  explicit TimedMonitor(std::shared_ptr<callbacks::LiveMonitor> monitor) : monitor_(std::move(monitor)) {}
  void on_train_begin(const callbacks::Logs& logs) override {
    monitor_->set_model(model());
    monitor_->set_params(params());
    monitor_->on_train_begin(logs);
  }
  void on_epoch_begin(int epoch, const callbacks::Logs& logs) override { monitor_->on_epoch_begin(epoch, logs); }
  void on_train_batch_begin(std::int64_t batch, const callbacks::Logs& logs) override {
    const Clock::time_point t = Clock::now();
    monitor_->on_train_batch_begin(batch, logs);
    seconds_ += std::chrono::duration<double>(Clock::now() - t).count();
  }
  void on_train_batch_end(std::int64_t batch, const callbacks::Logs& logs) override {
    const Clock::time_point t = Clock::now();
    monitor_->on_train_batch_end(batch, logs);
    seconds_ += std::chrono::duration<double>(Clock::now() - t).count();
    ++batches_;
  }
  void on_epoch_end(int epoch, const callbacks::Logs& logs) override { monitor_->on_epoch_end(epoch, logs); }
  void on_train_end(const callbacks::Logs& logs) override { monitor_->on_train_end(logs); }
  double seconds_per_batch() const { return batches_ ? seconds_ / double(batches_) : 0; }

 private:
  std::shared_ptr<callbacks::LiveMonitor> monitor_;
  double seconds_ = 0;
  std::int64_t batches_ = 0;
};

constexpr int kWarmup = 10;
constexpr int kBatch = 128;

// Sends events to a monitor that never reads until the socket buffers and then the queue are full: from then
// on every batch event is dropped, as for a monitor that stopped reading long ago.
void fill_until_stalled(callbacks::LiveMonitor& monitor) {
  callbacks::Logs logs;
  logs.set("loss", 0.5);
  logs.set("sparse_categorical_accuracy", 0.5);
  logs.set("size", kBatch);
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(60);
  while (!(monitor.dropped() > 0 && !monitor.flush(0.2)) && Clock::now() < give_up)
    for (int i = 0; i < 5000; ++i) monitor.on_train_batch_end(0, logs);
  for (std::int64_t i = 0; i <= callbacks::LiveMonitorOptions().queue_size; ++i) monitor.on_train_batch_end(0, logs);
}

// Segment mode: one fit, whose batch hooks go to a different LiveMonitor (or none) every `segment_steps`
// steps, following `schedule` (an index into `monitors` per segment; a null monitor is "none"). Records the
// time at the end of every segment.
class Switchboard : public callbacks::Callback {
 public:
  Switchboard(std::vector<std::shared_ptr<callbacks::LiveMonitor>> monitors, std::vector<int> schedule,
              int segment_steps)
      : monitors_(std::move(monitors)), schedule_(std::move(schedule)), segment_steps_(segment_steps) {}

  void on_train_begin(const callbacks::Logs& logs) override {
    for (auto& m : monitors_)
      if (m) {
        m->set_model(model());
        m->set_params(params());
        m->on_train_begin(logs);
      }
  }
  void on_epoch_begin(int epoch, const callbacks::Logs& logs) override {
    for (auto& m : monitors_)
      if (m) m->on_epoch_begin(epoch, logs);
  }
  void on_train_batch_begin(std::int64_t batch, const callbacks::Logs& logs) override {
    if (callbacks::LiveMonitor* m = active(batch)) m->on_train_batch_begin(batch, logs);
  }
  void on_train_batch_end(std::int64_t batch, const callbacks::Logs& logs) override {
    if (callbacks::LiveMonitor* m = active(batch)) m->on_train_batch_end(batch, logs);
    if ((batch + 1) % segment_steps_ == 0) ends_.push_back(Clock::now());
  }
  void on_epoch_end(int epoch, const callbacks::Logs& logs) override {
    for (auto& m : monitors_)
      if (m) m->on_epoch_end(epoch, logs);
  }
  void on_train_end(const callbacks::Logs& logs) override {
    for (auto& m : monitors_)
      if (m) m->on_train_end(logs);
  }
  const std::vector<Clock::time_point>& segment_ends() const { return ends_; }

 private:
  callbacks::LiveMonitor* active(std::int64_t batch) const {
    return monitors_[std::size_t(schedule_[std::size_t(batch / segment_steps_)])].get();
  }

  std::vector<std::shared_ptr<callbacks::LiveMonitor>> monitors_;
  std::vector<int> schedule_;
  int segment_steps_;
  std::vector<Clock::time_point> ends_;
};

// `fill`: make the monitor's queue full before training (a monitor that stopped reading long ago).
Result train(const std::string& which, const data::Dataset& data, int steps, std::optional<int> port, bool fill) {
  Sequential model = make_model(which);
  Clock::time_point start, end;
  double cpu_start = 0, cpu_end = 0;
  auto timer = std::make_shared<callbacks::LambdaCallback>(callbacks::LambdaCallbackOptions{
      .on_train_batch_end = [&](std::int64_t batch, const callbacks::Logs&) {
        if (batch + 1 == kWarmup) {
          start = Clock::now();
          cpu_start = cpu_seconds();
        }
        if (batch + 1 == steps) {
          end = Clock::now();
          cpu_end = cpu_seconds();
        }
      }});
  std::vector<callbacks::CallbackPtr> cbs;
  std::shared_ptr<callbacks::LiveMonitor> monitor;
  std::shared_ptr<TimedMonitor> timed;
  if (port) {
    monitor = std::make_shared<callbacks::LiveMonitor>(callbacks::LiveMonitorOptions{.port = *port, .run = "bench"});
    timed = std::make_shared<TimedMonitor>(monitor);
    cbs.push_back(timed);
  }
  if (fill) fill_until_stalled(*monitor);
  cbs.push_back(timer);
  const std::int64_t dropped_before = monitor ? monitor->dropped() : 0, sent_before = monitor ? monitor->sent() : 0;
  model.fit(data, {.epochs = 1, .verbose = 0, .callbacks = cbs, .steps_per_epoch = steps});
  Result r;
  r.examples_per_sec = double(steps - kWarmup) * kBatch / std::chrono::duration<double>(end - start).count();
  r.cpu_per_example = (cpu_end - cpu_start) / (double(steps - kWarmup) * kBatch);
  r.step_seconds = std::chrono::duration<double>(end - start).count() / double(steps - kWarmup);
  if (timed) r.hook_per_batch = timed->seconds_per_batch();
  if (monitor) {
    monitor->flush(0.5);
    r.sent = monitor->sent() - sent_before;
    r.dropped = monitor->dropped() - dropped_before;
  }
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The mean and the half width of its 95% confidence interval (normal approximation, 1.96 standard errors).
std::pair<double, double> mean_and_ci95(const std::vector<double>& v) {
  if (v.size() < 2) return {v.empty() ? 0.0 : v[0], 0.0};
  double sum = 0, squares = 0;
  for (double x : v) sum += x;
  const double mean = sum / double(v.size());
  for (double x : v) squares += (x - mean) * (x - mean);
  const double sd = std::sqrt(squares / double(v.size() - 1));
  return {mean, 1.96 * sd / std::sqrt(double(v.size()))};
}

// Segment mode (see Switchboard): `cycles` times the segments none, c1, none, c2, ..., then a last "none".
// Each monitor segment's examples/sec is divided by the mean of the "none" segments on either side, so that
// a slow spell of a shared machine, which lasts longer than a segment, cancels out.
void run_segments(const std::string& which, const data::Dataset& data, int cycles, int segment_steps,
                  const std::vector<std::pair<std::string, std::optional<int>>>& configs) {
  std::vector<std::shared_ptr<callbacks::LiveMonitor>> monitors;
  for (const auto& [name, port] : configs) {
    monitors.push_back(port ? std::make_shared<callbacks::LiveMonitor>(
                                  callbacks::LiveMonitorOptions{.port = *port, .run = "bench-" + name})
                            : nullptr);
    if (name == "stalled") fill_until_stalled(*monitors.back());
  }
  std::vector<int> schedule = {0};  // a first segment to warm up, not counted
  for (int c = 0; c < cycles; ++c)
    for (std::size_t k = 1; k < configs.size(); ++k) schedule.insert(schedule.end(), {0, int(k)});
  schedule.push_back(0);
  auto board = std::make_shared<Switchboard>(monitors, schedule, segment_steps);
  std::vector<std::int64_t> dropped_before, sent_before;
  for (const auto& m : monitors) {
    dropped_before.push_back(m ? m->dropped() : 0);
    sent_before.push_back(m ? m->sent() : 0);
  }
  Sequential model = make_model(which);
  const std::int64_t steps = std::int64_t(schedule.size()) * segment_steps;
  model.fit(data, {.epochs = 1, .verbose = 0, .callbacks = {board}, .steps_per_epoch = steps});

  const std::vector<Clock::time_point>& ends = board->segment_ends();
  std::vector<double> speed(ends.size(), 0);
  for (std::size_t i = 1; i < ends.size(); ++i)
    speed[i] = double(segment_steps) * kBatch / std::chrono::duration<double>(ends[i] - ends[i - 1]).count();
  std::map<int, std::vector<double>> ratios, speeds;
  for (std::size_t i = 1; i < ends.size(); ++i) {
    speeds[schedule[i]].push_back(speed[i]);
    if (schedule[i] != 0 && i + 1 < ends.size())
      ratios[schedule[i]].push_back(speed[i] / (0.5 * (speed[i - 1] + speed[i + 1])));
  }
  std::printf("\n%s, segment mode: %d cycles, segments of %d steps (batch %d), %d threads\n", which.c_str(), cycles,
              segment_steps, kBatch, backend::num_threads());
  std::printf("%-8s %9s %12s %14s %15s %22s %10s %10s\n", "config", "segments", "median ex/s", "median ratio",
              "25%..75%", "mean ratio (95% CI)", "sent", "dropped");
  for (std::size_t k = 0; k < configs.size(); ++k) {
    std::vector<double> r = ratios[int(k)];
    std::sort(r.begin(), r.end());
    const double q1 = k && !r.empty() ? r[r.size() / 4] : 1, q3 = k && !r.empty() ? r[(3 * r.size()) / 4] : 1;
    const auto& m = monitors[k];
    const auto [mean, half_width] = mean_and_ci95(r);
    std::printf("%-8s %9zu %12.0f %14.4f %7.3f..%-6.3f %12.4f +- %-6.4f %10lld %10lld\n", configs[k].first.c_str(),
                speeds[int(k)].size(), median(speeds[int(k)]), k ? median(ratios[int(k)]) : 1.0, q1, q3,
                k ? mean : 1.0, k ? half_width : 0.0,
                static_cast<long long>(m ? m->sent() - sent_before[k] : 0),
                static_cast<long long>(m ? m->dropped() - dropped_before[k] : 0));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::optional<int> monitor_port;
  for (std::size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--monitor-port") {
      monitor_port = std::atoi(args[i + 1].c_str());
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      break;
    }
  const std::string which = args.size() > 0 ? args[0] : "mlp";
  const std::string mode = args.size() > 1 ? args[1] : "runs";
  const int rounds = args.size() > 2 ? std::atoi(args[2].c_str()) : 5;
  const int steps = args.size() > 3 ? std::atoi(args[3].c_str()) : 300;
  if ((which != "mlp" && which != "convnet") || (mode != "runs" && mode != "segments") || rounds < 1 ||
      steps <= kWarmup) {
    std::fprintf(stderr,
                 "usage: bench_monitor mlp|convnet runs ROUNDS STEPS [--monitor-port P]\n"
                 "       bench_monitor mlp|convnet segments CYCLES SEGMENT_STEPS [--monitor-port P]\n");
    return 2;
  }

  int reading_port = 0, stalled_port = 0, absent_port = 0;
  const int reading_fd = listen_on_loopback(&reading_port);
  const int stalled_fd = listen_on_loopback(&stalled_port, 4096);
  ::close(listen_on_loopback(&absent_port));  // free a moment ago: nothing listens there
  const pid_t monitors = start_monitors(reading_fd, stalled_fd);
  ::close(reading_fd);
  ::close(stalled_fd);

  const auto data = data::fashion_mnist::load("train").shuffle(10000, 7).batch(kBatch).prefetch(2).repeat();
  std::vector<std::pair<std::string, std::optional<int>>> configs = {
      {"none", std::nullopt}, {"reading", reading_port}, {"stalled", stalled_port}, {"absent", absent_port}};
  if (monitor_port) configs.insert(configs.begin() + 2, {"gui", *monitor_port});
  if (mode == "segments") {
    run_segments(which, data, rounds, steps, configs);
    ::kill(monitors, SIGTERM);
    ::waitpid(monitors, nullptr, 0);
    return 0;
  }
  std::map<std::string, std::vector<double>> speeds, ratios, cpu_ratios, hook_fractions;
  for (int round = 0; round < rounds; ++round) {
    std::map<std::string, Result> this_round;
    for (std::size_t k = 0; k < configs.size(); ++k) {
      const auto& [name, port] = configs[(k + std::size_t(round)) % configs.size()];
      const Result r = train(which, data, steps, port, name == "stalled");
      this_round[name] = r;
      speeds[name].push_back(r.examples_per_sec);
      hook_fractions[name].push_back(r.hook_per_batch / r.step_seconds);
      std::printf("{\"model\": \"%s\", \"round\": %d, \"config\": \"%s\", \"examples_per_sec\": %.1f, "
                  "\"cpu_us_per_example\": %.3f, \"hook_us_per_batch\": %.2f, \"step_ms\": %.3f, \"sent\": %lld, "
                  "\"dropped\": %lld}\n",
                  which.c_str(), round, name.c_str(), r.examples_per_sec, 1e6 * r.cpu_per_example,
                  1e6 * r.hook_per_batch, 1e3 * r.step_seconds,
                  static_cast<long long>(r.sent), static_cast<long long>(r.dropped));
      std::fflush(stdout);
    }
    for (const auto& [name, r] : this_round) {
      ratios[name].push_back(r.examples_per_sec / this_round["none"].examples_per_sec);
      cpu_ratios[name].push_back(r.cpu_per_example / this_round["none"].cpu_per_example);
    }
  }
  ::kill(monitors, SIGTERM);
  ::waitpid(monitors, nullptr, 0);

  std::printf("\n%s, %d rounds of %d steps (batch %d), %d threads\n", which.c_str(), rounds, steps, kBatch,
              backend::num_threads());
  std::printf("%-8s %12s %17s %14s %15s %14s %12s\n", "config", "median ex/s", "min..max", "median ratio", "min..max",
              "CPU/ex ratio", "hook/step");
  for (const auto& [name, port] : configs) {
    const auto [lo, hi] = std::minmax_element(speeds[name].begin(), speeds[name].end());
    const auto [rlo, rhi] = std::minmax_element(ratios[name].begin(), ratios[name].end());
    std::printf("%-8s %12.0f %8.0f..%-8.0f %14.4f %7.3f..%-6.3f %14.4f %11.3f%%\n", name.c_str(), median(speeds[name]),
                *lo, *hi, median(ratios[name]), *rlo, *rhi, median(cpu_ratios[name]), 100 * median(hook_fractions[name]));
  }
  return 0;
}
