#include "api/training/progbar_logger.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

namespace tower::callbacks {

namespace {

constexpr int kBarWidth = 30;
constexpr double kUpdateInterval = 0.05;  // seconds between redraws of a dynamic bar

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

// Keras' value format: 4 decimals, or scientific for magnitudes at or below 1e-3; "nan" whatever its sign bit.
std::string format_value(double v) {
  if (std::isnan(v)) return "nan";
  return printf_string(std::fabs(v) > 1e-3 || v == 0 ? "%.4f" : "%.4e", v);
}

std::string format_seconds(double s) {
  const long t = std::lround(s);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t % 3600) / 60, t % 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

std::string format_step_time(double seconds) {
  if (seconds >= 1 || seconds == 0) return printf_string("%.0fs/step", seconds);
  if (seconds >= 1e-3) return printf_string("%.0fms/step", seconds * 1e3);
  return printf_string("%.0fus/step", seconds * 1e6);
}

}  // namespace

ProgbarLogger::ProgbarLogger(std::ostream* out) : out_(out), dynamic_(out == nullptr && isatty(STDOUT_FILENO)) {}

std::ostream& ProgbarLogger::out() const { return out_ ? *out_ : std::cout; }

void ProgbarLogger::on_train_begin(const Logs&) {
  in_fit_ = true;
  warned_non_finite_ = false;
  learned_steps_ = -1;
  verbose_ = params().verbose;
  epochs_ = params().epochs;
}

void ProgbarLogger::on_train_end(const Logs&) { in_fit_ = false; }

void ProgbarLogger::on_epoch_begin(int epoch, const Logs&) {
  epoch_ = epoch;
  verbose_ = params().verbose;
  epochs_ = params().epochs;
  // With unknown steps, the count seen in the first epoch becomes the target of the next ones (as Keras).
  start_bar(params().steps >= 0 ? params().steps : learned_steps_);
  if (verbose_ > 0 && epochs_ > 1) out() << "Epoch " << epoch + 1 << "/" << epochs_ << "\n" << std::flush;
}

void ProgbarLogger::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  examples_ += logs.get("size").value_or(0.0);
  update(batch + 1, logs, false);
  // Checked whenever the values are on the host anyway (a redraw or another callback read them): the bar never
  // makes a step wait for the device just to look for a NaN. The epoch's end checks what the batches did not.
  if (!warned_non_finite_ && verbose_ > 0 && !logs.deferred()) warn_if_non_finite(batch, logs);
}

void ProgbarLogger::warn_if_non_finite(std::int64_t batch, const Logs& logs) {
  for (const auto& [k, v] : logs.entries()) {
    if (k == "size" || std::isfinite(v)) continue;
    std::ostream& os = out();
    if (dynamic_ && verbose_ == 1 && drawn_) os << '\n';  // below the bar being drawn
    prev_width_ = 0;
    os << "Warning: " << k << " is " << format_value(v) << " at epoch " << epoch_ + 1 << ", batch " << batch + 1
       << " (the first non-finite value seen): the training diverged. Lower the learning rate, or add TerminateOnNaN "
          "to stop at the first invalid loss.\n"
       << std::flush;
    warned_non_finite_ = true;
    return;
  }
}

void ProgbarLogger::on_epoch_end(int, const Logs& logs) {
  update(seen_, logs, true);
  learned_steps_ = seen_;
  if (!warned_non_finite_ && verbose_ > 0 && seen_ > 0) warn_if_non_finite(seen_ - 1, logs);
}

void ProgbarLogger::on_test_begin(const Logs&) {
  if (in_fit_) return;
  verbose_ = params().verbose;
  start_bar(params().steps);
}

void ProgbarLogger::on_test_batch_end(std::int64_t batch, const Logs& logs) {
  if (in_fit_) return;
  examples_ += logs.get("size").value_or(0.0);
  update(batch + 1, logs, false);
}

void ProgbarLogger::on_test_end(const Logs& logs) {
  if (!in_fit_) update(seen_, logs, true);
}

void ProgbarLogger::on_predict_begin(const Logs&) {
  verbose_ = params().verbose;
  start_bar(params().steps);
}

void ProgbarLogger::on_predict_batch_end(std::int64_t batch, const Logs& logs) {
  examples_ += logs.get("size").value_or(0.0);
  update(batch + 1, Logs(), false);
}

void ProgbarLogger::on_predict_end(const Logs&) { update(seen_, Logs(), true); }

void ProgbarLogger::start_bar(std::int64_t target) {
  target_ = target;
  seen_ = 0;
  examples_ = 0;
  start_ = last_update_ = Clock::now();
  after_first_step_.reset();
  drawn_ = false;
  prev_width_ = 0;
}

double ProgbarLogger::step_seconds(std::int64_t current, Clock::time_point now) {
  if (current <= 0) return 0;
  double per_step;
  // The first step (warm-up, plan building) is left out of the estimate once there are others.
  if (after_first_step_ && current > 1)
    per_step = std::chrono::duration<double>(now - *after_first_step_).count() / static_cast<double>(current - 1);
  else
    per_step = std::chrono::duration<double>(now - start_).count() / static_cast<double>(current);
  if (current == 1 && !after_first_step_) after_first_step_ = now;
  return per_step;
}

void ProgbarLogger::update(std::int64_t current, const Logs& logs, bool finalize) {
  if (verbose_ <= 0) return;
  if (finalize && target_ < 0) target_ = current;
  seen_ = current;
  const Clock::time_point now = Clock::now();
  const double per_step = step_seconds(current, now);
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  // Only a terminal gets intermediate redraws; elsewhere (and with verbose 2) one line per bar.
  if (!finalize && (verbose_ != 1 || !dynamic_)) return;
  if (!finalize && drawn_ && std::chrono::duration<double>(now - last_update_).count() < kUpdateInterval) return;

  std::string line;
  const std::string count = std::to_string(current);
  const std::size_t digits = target_ > 0 ? std::to_string(target_).size() : 7;
  if (count.size() < digits) line.append(digits - count.size(), ' ');
  line += count;
  line += '/';
  line += target_ > 0 ? std::to_string(target_) : std::string("Unknown");
  if (verbose_ == 1 && target_ > 0) {
    const int filled = static_cast<int>(kBarWidth * std::min(1.0, static_cast<double>(current) / static_cast<double>(target_)));
    std::string bar(static_cast<std::size_t>(kBarWidth), '.');
    for (int i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i)] = '=';
    if (filled > 0 && current < target_) bar[static_cast<std::size_t>(filled - 1)] = '>';
    line += " [" + bar + "]";
  }
  if (!finalize && target_ > 0)
    line += " - ETA: " + format_seconds(per_step * static_cast<double>(target_ - current));
  else
    line += " - " + format_seconds(elapsed);
  line += " - " + format_step_time(per_step);
  if (examples_ > 0 && elapsed > 0) line += printf_string(" - %.0f examples/s", examples_ / elapsed);
  for (const auto& [k, v] : logs.entries())
    if (k != "size") line += " - " + k + ": " + format_value(v);

  std::ostream& os = out();
  if (dynamic_ && verbose_ == 1) {
    os << '\r' << line;
    if (prev_width_ > line.size()) os << std::string(prev_width_ - line.size(), ' ');
    prev_width_ = line.size();
  } else {
    os << line;
  }
  if (finalize) os << '\n';
  os << std::flush;
  drawn_ = true;
  last_update_ = now;
}

}  // namespace tower::callbacks
