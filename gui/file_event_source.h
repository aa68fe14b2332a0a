#pragma once
// FileEventSource: the events of a run directory's events.jsonl (or any events file): everything in it at
// once, then, when following, what is appended, checked every poll_interval. A file that shrinks was
// rewritten and is read again from its start. Events with an empty "run" belong to a run named after the
// directory holding events.jsonl (or after the file).
//
// A run in the file that has no train_end is lost (its trainer is gone) when its train_begin named a process
// id that no longer exists on this machine, or when the file has not grown for stale_after seconds.
#include <QTimer>

#include "gui/event_source.h"

namespace tower::monitor {

struct FileEventSourceOptions {
  bool follow = true;
  int poll_interval_ms = 250;
  double stale_after = 300;  // seconds
};

class FileEventSource : public EventSource {
  Q_OBJECT

 public:
  // `path` is an events file or a directory holding events.jsonl. Nothing is read before start().
  explicit FileEventSource(const QString& path, FileEventSourceOptions options = {}, QObject* parent = nullptr);

  // Reads what the file holds now and, when following, starts polling. Returns false (with error()) when
  // the file cannot be opened; a followed file that does not exist yet is waited for.
  bool start();
  // Reads what was appended since the last read, then checks which runs are lost.
  void poll();
  const QString& path() const { return path_; }
  const QString& error() const { return error_; }

  // The events file of a run directory, or `path` itself when it is a file.
  static QString events_file(const QString& path);

 private:
  void check_trainers();

  QString path_;
  FileEventSourceOptions options_;
  QString error_;
  qint64 offset_ = 0;
  QTimer timer_;
};

}  // namespace tower::monitor
