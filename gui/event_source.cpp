#include "gui/event_source.h"

namespace tower::monitor {

EventSource::EventSource(QString name, QObject* parent)
    : QObject(parent), name_(std::move(name)), default_run_(name_) {}

void EventSource::feed(const QByteArray& bytes) {
  partial_ += bytes;
  qsizetype start = 0;
  for (qsizetype newline; (newline = partial_.indexOf('\n', start)) >= 0; start = newline + 1)
    read_line(partial_.mid(start, newline - start), false);
  partial_.remove(0, start);
}

void EventSource::finish(const QString& reason) {
  if (!partial_.isEmpty()) {
    read_line(partial_, true);
    partial_.clear();
  }
  for (auto it = runs_.cbegin(); it != runs_.cend(); ++it) lose(it.key(), reason);
}

void EventSource::restart() {
  partial_.clear();
  line_number_ = 0;
}

void EventSource::lose(const QString& run, const QString& reason) {
  if (ended_.contains(run) || lost_.contains(run)) return;
  lost_.insert(run);
  emit run_lost(run, reason);
}

void EventSource::read_line(const QByteArray& raw, bool unfinished) {
  ++line_number_;
  const QByteArray line = raw.trimmed();
  if (line.isEmpty()) return;
  ++lines_;
  QString why;
  std::optional<Event> event = unfinished ? std::nullopt : Event::parse(line, &why);
  if (!event) {
    ++malformed_;
    last_error_ = QStringLiteral("%1:%2: %3").arg(name_).arg(line_number_).arg(unfinished ? "unfinished last line" : why);
    emit line_malformed(last_error_);
    return;
  }
  if (event->run.isEmpty()) event->run = default_run_;
  if (!runs_.contains(event->run)) runs_.insert(event->run, 0);
  if (event->kind == Event::Kind::TrainBegin) {
    runs_[event->run] = qint64(event->value(QStringLiteral("pid")).value_or(0));
    ended_.remove(event->run);
  }
  if (event->kind == Event::Kind::TrainEnd) ended_.insert(event->run);
  lost_.remove(event->run);
  emit event_read(*event);
}

}  // namespace tower::monitor
