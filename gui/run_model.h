#pragma once
// RunModel: every run the monitor has heard of, as a table for the run list (name, status, epoch, step,
// loss, examples/sec; the name column is checkable: unchecked runs are hidden from the charts), and the
// points of every chart.
//
// A run's values become series keyed by quantity and kind. The quantity is the value's name without "val_"
// ("loss", "sparse_categorical_accuracy", "examples_per_sec", "learning_rate"); the kind is Step (batch
// events), Epoch (epoch events) or Validation (the "val_" values of epoch events). Every point's x is the
// optimizer step the event reports (an epoch event sits at the step where its epoch ended), so a chart
// overlays per-step and per-epoch curves on one axis. A point whose step is not past the series' last point
// is a repeat (the same run fed twice) and is ignored; a non-finite value is counted in the run's table
// row but not plotted.
//
// Views hear of new values in batches: dataChanged and series_changed come at most every notify_interval_ms
// (a view redrawn at every event would cost the training machine more than all the rest of the monitor);
// rows, quantities and visibility changes are told at once.
//
// Status: a run is Running from its first event, Finished at train_end, Failed at a train_end whose status
// is "failed" or when its source loses it (the trainer died); a lost run that sends events again (a file
// that only looked stale) is Running again. A train_begin that starts over (a step before the run's last,
// or after the run ended) opens a new run named "<run> #2", "#3", ..., which later events of that name feed.
#include <QAbstractTableModel>
#include <QColor>
#include <QHash>
#include <QList>
#include <QMap>
#include <QPointF>
#include <QSet>
#include <QStringList>
#include <QTimer>
#include <memory>
#include <optional>
#include <vector>

#include "gui/event.h"
#include "gui/event_source.h"

namespace tower::monitor {

enum class RunStatus { Running, Finished, Failed };
enum class SeriesKind { Step, Epoch, Validation };

QString to_string(RunStatus status);
QString to_string(SeriesKind kind);  // "step", "epoch", "validation"

struct Run {
  QString name;
  RunStatus status = RunStatus::Running;
  QString reason;     // why it failed
  bool lost = false;  // failed because its source lost it, not by its own train_end
  QColor color;
  bool visible = true;
  int epochs = -1;   // from train_begin; -1 when unknown
  int epoch = 0;     // of the last event
  qint64 step = 0;   // the last step seen
  std::optional<double> loss;  // of the last batch or epoch event
  std::optional<double> examples_per_sec;
  // (quantity, kind) -> points in step order.
  QMap<QPair<QString, SeriesKind>, QList<QPointF>> series;

  const QList<QPointF>& points(const QString& quantity, SeriesKind kind) const;
};

class RunModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Name, Status, Epoch, Step, Loss, ExamplesPerSec, ColumnCount };
  static constexpr int notify_interval_ms = 250;

  explicit RunModel(QObject* parent = nullptr);
  ~RunModel() override;

  // Feeds this model from `source` (its events and lost runs).
  void attach(EventSource* source);
  void apply(const Event& event);
  // Marks the run failed unless it finished; a no-op for an unknown run.
  void lose(const QString& run, const QString& reason);

  int run_count() const { return int(runs_.size()); }
  const Run& run(int index) const { return *runs_[std::size_t(index)]; }
  // The run events named `name` feed now (the latest of "<name>", "<name> #2", ...); null when none.
  const Run* find(const QString& name) const;
  // Quantities in chart order: loss, then the others as first seen, examples_per_sec and learning_rate last.
  QStringList quantities() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

 signals:
  void quantity_added(const QString& quantity);
  // Points were added to, or the visibility changed of, some series of this quantity.
  void series_changed(const QString& quantity);

 private:
  Run& run_for(const Event& event);
  Run& open_run(const QString& event_name, const QString& display_name);
  void add_point(Run& run, const QString& quantity, SeriesKind kind, double x, double y);
  void row_changed(const Run& run);
  void notify();

  std::vector<std::unique_ptr<Run>> runs_;
  QHash<QString, int> latest_;     // event run name -> index of the run it feeds
  QHash<QString, int> instances_;  // event run name -> runs opened for it
  QStringList quantities_;
  QSet<int> changed_rows_;
  QSet<QString> changed_quantities_;
  QTimer notify_timer_;
};

}  // namespace tower::monitor
