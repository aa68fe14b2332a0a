#pragma once
// One training event: a line of events.jsonl, or of the LiveMonitor stream (api/callbacks/live_monitor.h).
//
//   {"event": "batch" | "epoch" | "train_begin" | "train_end", "run": "<name>", "epoch": 0, "step": 17,
//    "loss": 0.41, "<metric>": 0.87, "val_loss": 0.45, "val_<metric>": 0.85, "examples_per_sec": 5210.0,
//    "learning_rate": 0.001, "time": 1767000000.5}
//
// "event" and "run" are required strings ("run" may be empty: the source names the run then). "epoch" (0-based) and "step" (optimizer steps completed) default
// to 0 and -1 (unknown). Every other number is a value ("loss", metrics, their "val_" forms,
// "examples_per_sec", "learning_rate"); "time" is seconds since the Unix epoch. Bare NaN, Infinity and
// -Infinity are accepted, as Python's json module and Tower's Config write them. train_begin may carry
// "epochs", "steps" and "pid" (the trainer's process id); train_end may carry "status": "failed".
#include <QByteArray>
#include <QList>
#include <QMetaType>
#include <QPair>
#include <QString>
#include <optional>

namespace tower::monitor {

struct Event {
  enum class Kind { Batch, Epoch, TrainBegin, TrainEnd };

  Kind kind = Kind::Batch;
  QString run;
  int epoch = 0;
  qint64 step = -1;
  double time = 0;
  // Numbers other than epoch, step and time, in the line's order (values of batch and epoch events; the
  // run's "epochs", "steps" and "pid" on train_begin).
  QList<QPair<QString, double>> values;
  QString status;  // train_end's "status", empty when absent

  std::optional<double> value(const QString& key) const;

  // Parses one line (without its newline). On failure returns nothing and, when `error` is given, sets it to
  // why: not JSON, not an object, a missing or non-string "event"/"run", an unknown event, a non-integer
  // epoch or step.
  static std::optional<Event> parse(const QByteArray& line, QString* error = nullptr);
};

}  // namespace tower::monitor

Q_DECLARE_METATYPE(tower::monitor::Event)
