#include "gui/chart_view.h"

#include <QImage>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cmath>

#include "tests/gui/qt_test.h"
#include "tests/gui/sample_run.h"

namespace tower::monitor {

using namespace testing;

namespace {

void feed(RunModel& model, const QByteArray& text) {
  EventSource source("text");
  model.attach(&source);
  source.feed(text);
}

// Where a value of `series` is drawn, in the view's widget coordinates.
QPoint widget_position(ChartView& view, const QPointF& value, QLineSeries* series) {
  const QPointF in_chart = view.chart()->mapToPosition(value, series);
  return view.mapFromScene(view.chart()->mapToScene(in_chart));
}

}  // namespace

class ChartViewTest : public QObject {
  Q_OBJECT

 private slots:
  void each_run_and_kind_is_a_series_holding_the_model_points() {
    RunModel model;
    feed(model, sample_run("a"));
    feed(model, sample_run("b", false));
    ChartView view(&model, "loss");
    QCOMPARE(view.chart()->title(), QStringLiteral("Loss"));
    QCOMPARE(view.chart()->series().size(), 6);
    QCOMPARE(view.series(0, SeriesKind::Step)->points(), kSampleLossSteps);
    QCOMPARE(view.series(0, SeriesKind::Epoch)->points(), kSampleLossEpochs);
    QCOMPARE(view.series(1, SeriesKind::Validation)->points(), kSampleValLoss);
    QCOMPARE(view.series(1, SeriesKind::Step)->name(), QStringLiteral("b · step"));
    QCOMPARE(view.series(0, SeriesKind::Step)->pen().color().rgb(), model.run(0).color.rgb());
    QCOMPARE(view.series(1, SeriesKind::Validation)->pen().style(), Qt::DashLine);
    ChartView speed(&model, "examples_per_sec");
    QCOMPARE(speed.chart()->title(), QStringLiteral("Examples / sec"));
    QCOMPARE(speed.series(0, SeriesKind::Epoch)->points(), kSampleSpeedEpochs);
    QVERIFY(!speed.series(0, SeriesKind::Validation));
  }

  void the_axes_fit_the_visible_points_as_they_come() {
    RunModel model;
    feed(model, sample_run("a"));
    ChartView view(&model, "loss");
    QVERIFY(view.x_axis()->min() <= 1.0 && view.x_axis()->min() >= 0.0);
    QVERIFY(view.x_axis()->max() >= 4.0 && view.x_axis()->max() <= 5.0);
    QVERIFY(view.y_axis()->min() <= 0.5 && view.y_axis()->min() > 0.3);
    QVERIFY(view.y_axis()->max() >= 0.9 && view.y_axis()->max() < 1.1);
    // New points arrive: drawn within update_interval_ms, and the axes follow.
    feed(model, R"({"event": "batch", "run": "a", "step": 40, "loss": 7.5})" "\n");
    QTRY_COMPARE(view.series(0, SeriesKind::Step)->count(), 5);
    QVERIFY(view.x_axis()->max() >= 40.0 && view.x_axis()->max() <= 50.0);
    QVERIFY(view.y_axis()->max() >= 7.5);
    // Hiding the run that holds the big value shrinks the axes to the others.
    feed(model, sample_run("small"));
    QVERIFY(model.setData(model.index(0, RunModel::Name), Qt::Unchecked, Qt::CheckStateRole));
    view.refresh();
    QVERIFY(!view.series(0, SeriesKind::Step)->isVisible());
    QVERIFY(view.x_axis()->max() >= 4.0 && view.x_axis()->max() <= 5.0);
    QVERIFY(view.y_axis()->max() < 1.1);
  }

  // A short run's step axis is ticked at whole steps (labels "1 1 1 2 2 2" came from half-step ticks printed with
  // %.0f); the value axis keeps fractional ticks.
  void the_step_axis_of_a_short_run_has_whole_step_ticks() {
    RunModel model;
    feed(model, R"({"event": "train_begin", "run": "s", "epoch": 0, "step": 0, "epochs": 1, "steps": 3})" "\n"
                R"({"event": "batch", "run": "s", "epoch": 0, "step": 1, "loss": 0.9})" "\n"
                R"({"event": "batch", "run": "s", "epoch": 0, "step": 2, "loss": 0.8})" "\n"
                R"({"event": "batch", "run": "s", "epoch": 0, "step": 3, "loss": 0.7})" "\n");
    ChartView view(&model, "loss");
    view.refresh();
    const QValueAxis* x = view.x_axis();
    QCOMPARE(x->tickType(), QValueAxis::TicksDynamic);
    QVERIFY2(x->tickInterval() >= 1 && x->tickInterval() == std::floor(x->tickInterval()),
             qPrintable(QString::number(x->tickInterval())));
    QCOMPARE(x->tickAnchor(), std::floor(x->tickAnchor()));
    QCOMPARE(x->min(), std::floor(x->min()));
    QVERIFY(view.y_axis()->tickInterval() < 1);
  }

  void hovering_near_a_point_reads_it_out() {
    RunModel model;
    feed(model, sample_run("a"));
    ChartView view(&model, "loss");
    view.resize(800, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.refresh();
    const QPoint at = widget_position(view, {3, 0.6}, view.series(0, SeriesKind::Step));
    QTest::mouseMove(view.viewport(), at + QPoint(3, -2));
    QTRY_COMPARE(view.readout(), QStringLiteral("a · step · step 3 · 0.6"));
    const QPoint val = widget_position(view, {4, 0.65}, view.series(0, SeriesKind::Validation));
    QCOMPARE(view.readout_at(val), QStringLiteral("a · validation · step 4 · 0.65"));
    QCOMPARE(view.readout_at(QPoint(2, 2)), QString());  // outside the plot
  }

  void a_long_series_is_drawn_decimated_keeping_its_extremes() {
    QList<QPointF> points;
    for (int i = 1; i <= 10000; ++i) points.append({double(i), std::sin(i * 0.01) + (i == 4321 ? 5.0 : 0.0)});
    const QList<QPointF> kept = ChartView::decimate(points, 500);
    QVERIFY(kept.size() <= 4 * 500);
    QVERIFY(kept.size() >= 2 * 500);
    QCOMPARE(kept.first(), points.first());
    QCOMPARE(kept.last(), points.last());
    QVERIFY(kept.contains(points[4320]));  // the spike
    QVERIFY(std::is_sorted(kept.begin(), kept.end(), [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); }));
    for (const QPointF& p : kept) QVERIFY(points.contains(p));

    RunModel model;
    QByteArray text;
    for (const QPointF& p : points)
      text += QByteArray(R"({"event": "batch", "run": "long", "step": )") + QByteArray::number(qint64(p.x())) +
              R"(, "loss": )" + QByteArray::number(p.y(), 'g', 17) + "}\n";
    feed(model, text);
    ChartView view(&model, "loss");
    QVERIFY(view.series(0, SeriesKind::Step)->count() <= ChartView::max_drawn_points);
    QVERIFY(view.y_axis()->max() >= 5.0);  // the spike still sets the axis
    QCOMPARE(model.run(0).points("loss", SeriesKind::Step).size(), 10000);
  }

  void exports_the_chart_as_a_png() {
    RunModel model;
    feed(model, sample_run("a"));
    ChartView view(&model, "accuracy");
    view.resize(640, 400);
    QTemporaryDir dir;
    const QString path = dir.filePath("accuracy.png");
    QVERIFY(view.save_png(path));
    QImage image(path);
    QCOMPARE(image.size(), QSize(640, 400));
    // Not blank: the run's colour is drawn somewhere.
    bool coloured = false;
    for (int y = 0; y < image.height() && !coloured; ++y)
      for (int x = 0; x < image.width() && !coloured; ++x)
        coloured = image.pixelColor(x, y) == model.run(0).color;
    QVERIFY(coloured);
  }
};

TOWER_QT_TEST(ChartViewTest);

}  // namespace tower::monitor

#include "chart_view_test.moc"
