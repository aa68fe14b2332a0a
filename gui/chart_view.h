#pragma once
// ChartView: one quantity ("loss", a metric, "examples_per_sec", "learning_rate") of every visible run,
// against the optimizer step. Each run has its colour; per-step values are a thin light line, per-epoch values
// a thick line with points, validation values a dashed line with points. There is no legend (MainWindow
// shows the key; the run list shows the colours).
//
// The model's changes are drawn at most every update_interval_ms, and less often when drawing is slow: the
// wait is at least the last refresh and repaint's time divided by drawing_share, so that a chart never takes
// more than that share of a core from the training it watches (refresh() draws at once). A series longer than max_drawn_points is drawn from its
// first, lowest, highest and last point in each of max_drawn_points / 4 equal steps of x (no peak is lost);
// the read-out still sees every point. Both axes fit
// the visible points after every refresh, with a margin and round tick values (never below zero for values
// that are never negative; whole numbers on the step axis). Moving the mouse over the plot shows a read-out of
// the point nearest to it: run, kind, step and value. The context menu exports the chart as a PNG.
#include <QChartView>
#include <QGraphicsEllipseItem>
#include <QGraphicsSimpleTextItem>
#include <QHash>
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

  static constexpr int update_interval_ms = 1000;
  static constexpr double drawing_share = 0.0025;
  // The wait before drawing the model's next changes, from the time the last refresh and repaint took.
  int update_interval() const;
  static constexpr int max_drawn_points = 2000;
  // The decimation above: at most 4 points per bucket, in x order, keeping each bucket's extremes.
  static QList<QPointF> decimate(const QList<QPointF>& points, int buckets);
  // A quantity's chart title: "loss" -> "Loss", "examples_per_sec" -> "Examples / sec".
  static QString title_for(const QString& quantity);

 protected:
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;
  void paintEvent(QPaintEvent* event) override;

 private:
  QLineSeries* make_series(const Run& run, SeriesKind kind);
  void fit_axes();
  void show_readout(const QString& text, const QPointF& at);

  RunModel* model_;
  QString quantity_;
  QValueAxis* x_axis_;
  QValueAxis* y_axis_;
  QMap<QPair<int, SeriesKind>, QLineSeries*> series_;
  QHash<QLineSeries*, qsizetype> drawn_;  // model points a series was last drawn from
  QTimer update_timer_;
  double refresh_seconds_ = 0, paint_seconds_ = 0;  // the last refresh's and the last repaint's
  QString readout_;
  QGraphicsSimpleTextItem* readout_item_;
  QGraphicsEllipseItem* marker_;
};

}  // namespace tower::monitor
