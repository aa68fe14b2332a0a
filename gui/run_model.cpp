#include "gui/run_model.h"

#include <QBrush>
#include <QPixmap>
#include <cmath>
#include <utility>

namespace tower::monitor {

namespace {

// Tableau 10: distinct on white, and in the same order for every chart.
const QList<QColor>& palette() {
  static const QList<QColor> colors = {QColor(0x4e79a7), QColor(0xf28e2b), QColor(0x59a14f), QColor(0xe15759),
                                       QColor(0x76b7b2), QColor(0xedc948), QColor(0xb07aa1), QColor(0xff9da7),
                                       QColor(0x9c755f), QColor(0xbab0ac)};
  return colors;
}

}  // namespace

QString to_string(RunStatus status) {
  switch (status) {
    case RunStatus::Running: return QStringLiteral("running");
    case RunStatus::Finished: return QStringLiteral("finished");
    case RunStatus::Failed: return QStringLiteral("failed");
  }
  return {};
}

QString to_string(SeriesKind kind) {
  switch (kind) {
    case SeriesKind::Step: return QStringLiteral("step");
    case SeriesKind::Epoch: return QStringLiteral("epoch");
    case SeriesKind::Validation: return QStringLiteral("validation");
  }
  return {};
}

const QList<QPointF>& Run::points(const QString& quantity, SeriesKind kind) const {
  static const QList<QPointF> none;
  const auto it = series.constFind({quantity, kind});
  return it == series.cend() ? none : *it;
}

RunModel::RunModel(QObject* parent) : QAbstractTableModel(parent) {
  notify_timer_.setSingleShot(true);
  notify_timer_.setInterval(notify_interval_ms);
  connect(&notify_timer_, &QTimer::timeout, this, &RunModel::notify);
}

RunModel::~RunModel() = default;

void RunModel::attach(EventSource* source) {
  connect(source, &EventSource::event_read, this, &RunModel::apply);
  connect(source, &EventSource::run_lost, this, &RunModel::lose);
}

const Run* RunModel::find(const QString& name) const {
  const auto it = latest_.constFind(name);
  return it == latest_.cend() ? nullptr : runs_[std::size_t(*it)].get();
}

QStringList RunModel::quantities() const {
  static const QStringList last = {QStringLiteral("examples_per_sec"), QStringLiteral("learning_rate")};
  QStringList ordered;
  if (quantities_.contains(QStringLiteral("loss"))) ordered << QStringLiteral("loss");
  for (const QString& q : quantities_)
    if (q != QLatin1String("loss") && !last.contains(q)) ordered << q;
  for (const QString& q : last)
    if (quantities_.contains(q)) ordered << q;
  return ordered;
}

Run& RunModel::open_run(const QString& event_name, const QString& display_name) {
  const int row = int(runs_.size());
  beginInsertRows({}, row, row);
  auto run = std::make_unique<Run>();
  run->name = display_name;
  run->color = palette()[row % palette().size()];
  runs_.push_back(std::move(run));
  latest_[event_name] = row;
  ++instances_[event_name];
  endInsertRows();
  return *runs_.back();
}

Run& RunModel::run_for(const Event& event) {
  const auto it = latest_.constFind(event.run);
  if (it == latest_.cend()) return open_run(event.run, event.run);
  Run& run = *runs_[std::size_t(*it)];
  const bool starts_over = event.kind == Event::Kind::TrainBegin &&
                           (run.status != RunStatus::Running || (event.step >= 0 && event.step < run.step));
  if (!starts_over) return run;
  if (run.status == RunStatus::Running) {
    run.status = RunStatus::Failed;
    run.reason = QStringLiteral("started again");
    row_changed(run);
  }
  return open_run(event.run, QStringLiteral("%1 #%2").arg(event.run).arg(instances_[event.run] + 1));
}

void RunModel::apply(const Event& event) {
  Run& run = run_for(event);
  if (run.lost && event.kind != Event::Kind::TrainEnd) {
    run.status = RunStatus::Running;
    run.lost = false;
    run.reason.clear();
  }
  const double x = event.step >= 0 ? double(event.step)
                                   : double(event.kind == Event::Kind::Batch ? run.step + 1 : run.step);
  switch (event.kind) {
    case Event::Kind::TrainBegin:
      if (const auto epochs = event.value(QStringLiteral("epochs"))) run.epochs = int(*epochs);
      break;
    case Event::Kind::Batch:
      for (const auto& [key, value] : event.values) add_point(run, key, SeriesKind::Step, x, value);
      break;
    case Event::Kind::Epoch:
      for (const auto& [key, value] : event.values) {
        if (key.startsWith(QLatin1String("val_"))) add_point(run, key.mid(4), SeriesKind::Validation, x, value);
        else add_point(run, key, SeriesKind::Epoch, x, value);
      }
      break;
    case Event::Kind::TrainEnd:
      if (run.status != RunStatus::Failed || run.lost) {
        const bool failed = event.status == QLatin1String("failed");
        run.status = failed ? RunStatus::Failed : RunStatus::Finished;
        run.reason = failed ? QStringLiteral("train_end says failed") : QString();
        run.lost = false;
      }
      break;
  }
  if (event.kind == Event::Kind::Batch || event.kind == Event::Kind::Epoch) {
    run.epoch = event.epoch;
    if (const auto loss = event.value(QStringLiteral("loss"))) run.loss = *loss;
    if (const auto speed = event.value(QStringLiteral("examples_per_sec"))) run.examples_per_sec = *speed;
  }
  run.step = std::max(run.step, qint64(x));
  row_changed(run);
}

void RunModel::lose(const QString& name, const QString& reason) {
  const auto it = latest_.constFind(name);
  if (it == latest_.cend()) return;
  Run& run = *runs_[std::size_t(*it)];
  if (run.status != RunStatus::Running) return;
  run.status = RunStatus::Failed;
  run.lost = true;
  run.reason = reason;
  row_changed(run);
}

void RunModel::add_point(Run& run, const QString& quantity, SeriesKind kind, double x, double y) {
  if (!quantities_.contains(quantity)) {
    quantities_ << quantity;
    emit quantity_added(quantity);
  }
  if (!std::isfinite(y)) return;
  QList<QPointF>& points = run.series[{quantity, kind}];
  if (!points.isEmpty() && x <= points.last().x()) return;
  points.append(QPointF(x, y));
  changed_quantities_.insert(quantity);
  if (!notify_timer_.isActive()) notify_timer_.start();
}

void RunModel::row_changed(const Run& run) {
  for (std::size_t row = 0; row < runs_.size(); ++row)
    if (runs_[row].get() == &run) changed_rows_.insert(int(row));
  if (!notify_timer_.isActive()) notify_timer_.start();
}

void RunModel::notify() {
  const QSet<int> rows = std::exchange(changed_rows_, {});
  const QSet<QString> quantities = std::exchange(changed_quantities_, {});
  for (int row : rows) emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
  for (const QString& q : quantities) emit series_changed(q);
}

int RunModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(runs_.size()); }

int RunModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(runs_.size())) return {};
  const Run& run = *runs_[std::size_t(index.row())];
  const auto number = [](std::optional<double> v, char format, int precision) {
    return v ? QString::number(*v, format, precision) : QString();
  };
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Name: return run.name;
      case Status: return to_string(run.status);
      case Epoch: return run.epochs > 0 ? QStringLiteral("%1/%2").arg(run.epoch + 1).arg(run.epochs) : QString::number(run.epoch + 1);
      case Step: return run.step;
      case Loss: return number(run.loss, 'g', 4);
      case ExamplesPerSec: return number(run.examples_per_sec, 'f', 0);
    }
  }
  if (role == Qt::CheckStateRole && index.column() == Name) return run.visible ? Qt::Checked : Qt::Unchecked;
  if (role == Qt::DecorationRole && index.column() == Name) {
    QPixmap swatch(12, 12);
    swatch.fill(run.color);
    return swatch;
  }
  if (role == Qt::ForegroundRole && index.column() == Status) {
    switch (run.status) {
      case RunStatus::Running: return QBrush(QColor(0x1f77b4));
      case RunStatus::Finished: return QBrush(QColor(0x2ca02c));
      case RunStatus::Failed: return QBrush(QColor(0xd62728));
    }
  }
  if (role == Qt::ToolTipRole && index.column() == Status && !run.reason.isEmpty()) return run.reason;
  if (role == Qt::TextAlignmentRole && index.column() >= Epoch) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant RunModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const QStringList headers = {"Run", "Status", "Epoch", "Step", "Loss", "Examples/s"};
  return headers.value(section);
}

Qt::ItemFlags RunModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.column() == Name) f |= Qt::ItemIsUserCheckable;
  return f;
}

bool RunModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!index.isValid() || index.column() != Name || role != Qt::CheckStateRole) return false;
  Run& run = *runs_[std::size_t(index.row())];
  run.visible = value.value<Qt::CheckState>() == Qt::Checked;
  emit dataChanged(index, index);
  for (const QString& q : quantities_) emit series_changed(q);
  return true;
}

}  // namespace tower::monitor
