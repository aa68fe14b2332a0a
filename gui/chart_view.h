#pragma once
// ChartView: one quantity ("loss", a metric, "examples_per_sec", "learning_rate") of every visible run,
// against the optimizer step. Each run has its colour; per-step values are a thin light line, per-epoch values
// a thick line with points, validation values a dashed line with points. There is no legend (MainWindow
// shows the key; the run list shows the colours).
//
// The model's changes are drawn at most every update_interval_ms (refresh() draws at once). Both axes fit
// the visible points after every refresh, with a margin and round tick values (never below zero for values
// that are never negative). Moving the mouse over the plot shows a read-out of
// the point nearest to it: run, kind, step and value. The context menu exports the chart as a PNG.
#include <QChartView>
#include <QGraphicsEllipseItem>
#include <QGraphicsSimpleTextItem>
#include <QLineSeries>
#include <QMap>
#include <QTimer>
#include <QValueAxis>

#include "gui/run_model.h"

namespace tower::monitor {

class ChartView : public QChartView {
  Q_OBJECT

 public:
  ChartView(RunModel* model, QString quantity, QWidget* parent = nullptr);

  const QString& quantity() const { return quantity_; }
  // Brings the series and axes up to date with the model now.
  void refresh();
  // The series of run `run_index` and `kind`, or null when it has no points yet.
  QLineSeries* series(int run_index, SeriesKind kind) const;
  QValueAxis* x_axis() const { return x_axis_; }
  QValueAxis* y_axis() const { return y_axis_; }
  // The read-out for the mouse at `position` (widget coordinates): "<run> · <kind> · step <x> · <value>" for
  // the nearest visible point within 40 pixels, else empty. Also what the chart shows there.
  QString readout_at(const QPoint& position);
  QString readout() const { return readout_; }
  // Writes the chart as it is drawn now; returns false when the file cannot be written.
  bool save_png(const QString& path);

  static constexpr int update_interval_ms = 200;
  // A quantity's chart title: "loss" -> "Loss", "examples_per_sec" -> "Examples / sec".
  static QString title_for(const QString& quantity);

 protected:
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  QLineSeries* make_series(const Run& run, SeriesKind kind);
  void fit_axes();
  void show_readout(const QString& text, const QPointF& at);

  RunModel* model_;
  QString quantity_;
  QValueAxis* x_axis_;
  QValueAxis* y_axis_;
  QMap<QPair<int, SeriesKind>, QLineSeries*> series_;
  QTimer update_timer_;
  QString readout_;
  QGraphicsSimpleTextItem* readout_item_;
  QGraphicsEllipseItem* marker_;
};

}  // namespace tower::monitor
