#pragma once
// EventSource: one stream of event lines (a followed events.jsonl, one LiveMonitor connection) turned into
// Events. Bytes arrive in any pieces; a line counts once its newline has arrived, so a writer caught in the
// middle of a line is never misread. A line that does not parse (event.h) is skipped, counted and reported
// with its number; it never stops the stream. Empty lines are ignored.
//
// The source remembers which runs it has seen and which of them ended (train_end). When it learns that the
// trainer behind a run has gone without train_end (finish() on a closed connection, a dead process for a
// file) it emits run_lost for each such run.
#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>

#include "gui/event.h"

namespace tower::monitor {

class EventSource : public QObject {
  Q_OBJECT

 public:
  // `name` says where the lines come from (a path, "127.0.0.1:41234"), for messages, and names the runs of
  // events whose "run" is empty unless set_default_run() says otherwise.
  explicit EventSource(QString name, QObject* parent = nullptr);
  void set_default_run(const QString& run) { default_run_ = run; }

  const QString& name() const { return name_; }
  qint64 lines() const { return lines_; }          // complete non-empty lines read
  qint64 malformed() const { return malformed_; }  // of which did not parse
  // "<name>:<line>: <why>" for the last malformed line; empty when none.
  const QString& last_error() const { return last_error_; }
  // Runs seen, and the pid their train_begin gave (0 when none).
  const QHash<QString, qint64>& runs() const { return runs_; }
  bool ended(const QString& run) const { return ended_.contains(run); }  // train_end seen
  bool lost(const QString& run) const { return lost_.contains(run); }    // run_lost emitted, no event since

  // Reads complete lines from `bytes` (after what an earlier call left unfinished) and emits them.
  void feed(const QByteArray& bytes);
  // The stream has ended: an unfinished last line counts as malformed, and every run seen without
  // train_end is lost for `reason`.
  void finish(const QString& reason);
  // Forgets a partial line (a file that was truncated and is read again from its start).
  void restart();

 signals:
  void event_read(const tower::monitor::Event& event);
  void line_malformed(const QString& message);
  void run_lost(const QString& run, const QString& reason);

 protected:
  // Emits run_lost for `run` unless it ended or was already lost (an event for it since makes it live again).
  void lose(const QString& run, const QString& reason);

 private:
  // `unfinished`: the stream ended before this line's newline, so the line is malformed whatever it holds.
  void read_line(const QByteArray& line, bool unfinished);

  QString name_;
  QString default_run_;
  QByteArray partial_;
  qint64 line_number_ = 0;
  qint64 lines_ = 0;
  qint64 malformed_ = 0;
  QString last_error_;
  QHash<QString, qint64> runs_;
  QSet<QString> ended_;
  QSet<QString> lost_;
};

}  // namespace tower::monitor
