#include "gui/chart_view.h"

#include <QContextMenuEvent>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QMenu>
#include <QMouseEvent>
#include <QPen>
#include <algorithm>
#include <cmath>
#include <limits>

namespace tower::monitor {

namespace {

constexpr SeriesKind kKinds[] = {SeriesKind::Step, SeriesKind::Epoch, SeriesKind::Validation};
constexpr double kReadoutRadius = 40;  // pixels

}  // namespace

QString ChartView::title_for(const QString& quantity) {
  if (quantity == QLatin1String("examples_per_sec")) return QStringLiteral("Examples / sec");
  if (quantity == QLatin1String("learning_rate")) return QStringLiteral("Learning rate");
  QString title = quantity;
  title.replace('_', ' ');
  if (!title.isEmpty()) title[0] = title[0].toUpper();
  return title;
}

ChartView::ChartView(RunModel* model, QString quantity, QWidget* parent)
    : QChartView(new QChart, parent),
      model_(model),
      quantity_(std::move(quantity)),
      x_axis_(new QValueAxis),
      y_axis_(new QValueAxis) {
  QChart* c = chart();
  c->setTitle(title_for(quantity_));
  // Run colours are in the run list and line styles in the window's key, so a legend would only repeat them.
  c->legend()->hide();
  c->setMargins(QMargins(4, 4, 4, 4));
  c->setDropShadowEnabled(false);
  x_axis_->setTitleText(QStringLiteral("step"));
  x_axis_->setLabelFormat(QStringLiteral("%.0f"));
  y_axis_->setLabelFormat(QStringLiteral("%.4g"));
  c->addAxis(x_axis_, Qt::AlignBottom);
  c->addAxis(y_axis_, Qt::AlignLeft);
  setRenderHint(QPainter::Antialiasing);
  // Partial repaints leave old line ends behind when the axes rescale; the charts are small, so repaint whole.
  setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
  setMouseTracking(true);
  setMinimumSize(360, 260);

  readout_item_ = new QGraphicsSimpleTextItem(c);
  readout_item_->setZValue(20);
  readout_item_->hide();
  marker_ = new QGraphicsEllipseItem(-4, -4, 8, 8, c);
  marker_->setZValue(20);
  marker_->hide();

  update_timer_.setSingleShot(true);
  connect(&update_timer_, &QTimer::timeout, this, &ChartView::refresh);
  connect(model_, &RunModel::series_changed, this, [this](const QString& q) {
    if (q == quantity_ && !update_timer_.isActive()) update_timer_.start(update_interval());
  });
  refresh();
}

QLineSeries* ChartView::series(int run_index, SeriesKind kind) const { return series_.value({run_index, kind}); }

QLineSeries* ChartView::make_series(const Run& run, SeriesKind kind) {
  auto* s = new QLineSeries;
  s->setName(QStringLiteral("%1 · %2").arg(run.name, to_string(kind)));
  QPen pen(run.color);
  switch (kind) {
    case SeriesKind::Step: {
      // Light, so that the epoch curves drawn over it stand out.
      QColor light = run.color;
      light.setAlpha(120);
      pen.setColor(light);
      pen.setWidthF(1.0);
      break;
    }
    case SeriesKind::Epoch:
      pen.setWidthF(2.5);
      s->setPointsVisible(true);
      break;
    case SeriesKind::Validation:
      pen.setWidthF(2.5);
      pen.setStyle(Qt::DashLine);
      s->setPointsVisible(true);
      break;
  }
  s->setPen(pen);
  chart()->addSeries(s);
  s->attachAxis(x_axis_);
  s->attachAxis(y_axis_);
  return s;
}

int ChartView::update_interval() const {
  return std::max(update_interval_ms, int(1000 * (refresh_seconds_ + paint_seconds_) / drawing_share));
}

void ChartView::paintEvent(QPaintEvent* event) {
  QElapsedTimer timer;
  timer.start();
  QChartView::paintEvent(event);
  paint_seconds_ = double(timer.nsecsElapsed()) * 1e-9;
}

void ChartView::refresh() {
  QElapsedTimer timer;
  timer.start();
  update_timer_.stop();
  for (int i = 0; i < model_->run_count(); ++i) {
    const Run& run = model_->run(i);
    for (SeriesKind kind : kKinds) {
      const QList<QPointF>& points = run.points(quantity_, kind);
      if (points.isEmpty()) continue;
      QLineSeries*& s = series_[{i, kind}];
      if (!s) s = make_series(run, kind);
      qsizetype& drawn = drawn_[s];
      if (drawn != points.size()) {
        s->replace(points.size() > max_drawn_points ? decimate(points, max_drawn_points / 4) : points);
        drawn = points.size();
      }
      if (s->isVisible() != run.visible) s->setVisible(run.visible);
    }
  }
  fit_axes();
  refresh_seconds_ = double(timer.nsecsElapsed()) * 1e-9;
}

QList<QPointF> ChartView::decimate(const QList<QPointF>& points, int buckets) {
  QList<QPointF> kept;
  kept.reserve(4 * buckets);
  const double x0 = points.first().x(), width = (points.last().x() - x0) / buckets;
  qsizetype begin = 0;
  while (begin < points.size()) {
    const double end_x = x0 + width * double(int((points[begin].x() - x0) / width) + 1);
    qsizetype end = begin, lo = begin, hi = begin;
    for (; end < points.size() && (points[end].x() < end_x || end == begin); ++end) {
      if (points[end].y() < points[lo].y()) lo = end;
      if (points[end].y() > points[hi].y()) hi = end;
    }
    // In x order: first, the lower and higher extreme, last.
    for (qsizetype k : {begin, std::min(lo, hi), std::max(lo, hi), end - 1})
      if (kept.isEmpty() || kept.last() != points[k] || k == begin) kept.append(points[k]);
    begin = end;
  }
  return kept;
}

namespace {

// Sets the axis to a range with round ends that holds [lo, hi], ticked every 1, 2 or 5 times a power of ten;
// `whole` ticks no finer than 1 (steps and epochs are counts: half-step ticks would print "1 1 2 2" with %.0f).
void set_nice_range(QValueAxis* axis, double lo, double hi, bool whole) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double fraction = raw / magnitude;
  double step = (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * magnitude;
  if (whole) step = std::max(1.0, std::round(step));
  const double nice_lo = std::floor(lo / step + 1e-9) * step, nice_hi = std::ceil(hi / step - 1e-9) * step;
  axis->setRange(nice_lo, nice_hi);
  axis->setTickType(QValueAxis::TicksDynamic);
  axis->setTickAnchor(nice_lo);
  axis->setTickInterval(step);
}

}  // namespace

void ChartView::fit_axes() {
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (QLineSeries* s : series_) {
    if (!s->isVisible()) continue;
    for (const QPointF& p : s->points()) {
      x0 = std::min(x0, p.x());
      x1 = std::max(x1, p.x());
      y0 = std::min(y0, p.y());
      y1 = std::max(y1, p.y());
    }
  }
  if (!std::isfinite(x0)) {
    x_axis_->setRange(0, 1);
    y_axis_->setRange(0, 1);
    return;
  }
  if (x1 == x0) x1 = x0 + 1;
  const double pad = y1 > y0 ? 0.05 * (y1 - y0) : std::max(std::abs(y0) * 0.1, 1e-9);
  // Values that are never negative (losses, accuracies, rates) keep the axis at or above zero.
  set_nice_range(x_axis_, std::max(0.0, x0), x1, true);
  set_nice_range(y_axis_, y0 >= 0 ? std::max(0.0, y0 - pad) : y0 - pad, y1 + pad, false);
}

QString ChartView::readout_at(const QPoint& position) {
  const QPointF at = chart()->mapFromScene(mapToScene(position));
  const QRectF plot = chart()->plotArea();
  QString best_text;
  QPointF best_position;
  QColor best_color;
  if (plot.contains(at) && x_axis_->max() > x_axis_->min() && y_axis_->max() > y_axis_->min()) {
    const double sx = plot.width() / (x_axis_->max() - x_axis_->min());
    const double sy = plot.height() / (y_axis_->max() - y_axis_->min());
    const auto to_pixels = [&](const QPointF& v) {
      return QPointF(plot.left() + (v.x() - x_axis_->min()) * sx, plot.bottom() - (v.y() - y_axis_->min()) * sy);
    };
    const double mouse_x = x_axis_->min() + (at.x() - plot.left()) / sx;
    double best = kReadoutRadius;
    for (auto it = series_.cbegin(); it != series_.cend(); ++it) {
      if (!(*it)->isVisible()) continue;
      const Run& run = model_->run(it.key().first);
      const QList<QPointF>& points = run.points(quantity_, it.key().second);
      // Points are in x order: only those within the radius along x can be nearest.
      const auto lo = std::lower_bound(points.begin(), points.end(), mouse_x - kReadoutRadius / sx,
                                       [](const QPointF& p, double x) { return p.x() < x; });
      for (auto p = lo; p != points.end() && p->x() <= mouse_x + kReadoutRadius / sx; ++p) {
        const QPointF pixel = to_pixels(*p);
        const double d = std::hypot(pixel.x() - at.x(), pixel.y() - at.y());
        if (d >= best) continue;
        best = d;
        best_position = pixel;
        best_color = run.color;
        best_text = QStringLiteral("%1 · %2 · step %3 · %4")
                        .arg(run.name, to_string(it.key().second))
                        .arg(qint64(p->x()))
                        .arg(p->y(), 0, 'g', 5);
      }
    }
  }
  show_readout(best_text, best_position);
  if (!best_text.isEmpty()) marker_->setBrush(best_color);
  return best_text;
}

void ChartView::show_readout(const QString& text, const QPointF& at) {
  readout_ = text;
  if (text.isEmpty()) {
    readout_item_->hide();
    marker_->hide();
    return;
  }
  readout_item_->setText(text);
  readout_item_->setPos(chart()->plotArea().topLeft() + QPointF(6, 4));
  readout_item_->show();
  marker_->setPos(at);
  marker_->show();
}

void ChartView::mouseMoveEvent(QMouseEvent* event) {
  readout_at(event->position().toPoint());
  QChartView::mouseMoveEvent(event);
}

void ChartView::leaveEvent(QEvent* event) {
  show_readout({}, {});
  QChartView::leaveEvent(event);
}

void ChartView::contextMenuEvent(QContextMenuEvent* event) {
  QMenu menu(this);
  QAction* export_png = menu.addAction(QStringLiteral("Export chart as PNG…"));
  if (menu.exec(event->globalPos()) != export_png) return;
  const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export chart"), quantity_ + ".png",
                                                    QStringLiteral("PNG images (*.png)"));
  if (!path.isEmpty()) save_png(path);
}

bool ChartView::save_png(const QString& path) {
  refresh();
  QCoreApplication::processEvents();  // the chart lays out its axes in the event loop
  return grab().save(path, "PNG");
}

}  // namespace tower::monitor
