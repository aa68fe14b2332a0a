#include "gui/file_event_source.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <cerrno>
#include <csignal>

namespace tower::monitor {

namespace {

bool process_gone(qint64 pid) { return pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH; }

}  // namespace

QString FileEventSource::events_file(const QString& path) {
  return QFileInfo(path).isDir() ? path + QStringLiteral("/events.jsonl") : path;
}

FileEventSource::FileEventSource(const QString& path, FileEventSourceOptions options, QObject* parent)
    : EventSource(events_file(path), parent), path_(events_file(path)), options_(options) {
  // A run directory names its unnamed runs: "runs/cnn/events.jsonl" -> "cnn".
  const QFileInfo file(path_);
  set_default_run(file.fileName() == QLatin1String("events.jsonl") ? file.absoluteDir().dirName() : file.completeBaseName());
  timer_.setInterval(options_.poll_interval_ms);
  connect(&timer_, &QTimer::timeout, this, &FileEventSource::poll);
}

bool FileEventSource::start() {
  if (!QFileInfo::exists(path_) && !options_.follow) {
    error_ = QStringLiteral("%1: no such file").arg(path_);
    return false;
  }
  QFile file(path_);
  if (QFileInfo::exists(path_) && !file.open(QIODevice::ReadOnly)) {
    error_ = QStringLiteral("%1: %2").arg(path_, file.errorString());
    return false;
  }
  poll();
  if (options_.follow) timer_.start();
  return true;
}

void FileEventSource::poll() {
  QFile file(path_);
  if (file.open(QIODevice::ReadOnly)) {
    if (file.size() < offset_) {
      offset_ = 0;
      restart();
    }
    if (file.size() > offset_ && file.seek(offset_)) {
      const QByteArray bytes = file.read(file.size() - offset_);
      offset_ += bytes.size();
      feed(bytes);
    }
  }
  check_trainers();
}

void FileEventSource::check_trainers() {
  // Silence is measured from the file's last write, so the file of a run that crashed long ago is stale at
  // once.
  const QDateTime modified = QFileInfo(path_).lastModified();
  if (!modified.isValid()) return;
  const double silent = double(modified.msecsTo(QDateTime::currentDateTime())) / 1000.0;
  for (auto it = runs().cbegin(); it != runs().cend(); ++it) {
    if (ended(it.key()) || lost(it.key())) continue;
    if (process_gone(it.value()))
      lose(it.key(), QStringLiteral("trainer process %1 is gone").arg(it.value()));
    else if (silent > options_.stale_after)
      lose(it.key(), QStringLiteral("no events for %1 s").arg(qint64(silent)));
  }
}

}  // namespace tower::monitor
