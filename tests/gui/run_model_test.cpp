#include "gui/run_model.h"

#include <QSignalSpy>
#include <QTest>

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

}  // namespace

class RunModelTest : public QObject {
  Q_OBJECT

 private slots:
  void events_become_points_of_the_right_series() {
    RunModel model;
    QSignalSpy quantities(&model, &RunModel::quantity_added);
    feed(model, sample_run("a"));
    QCOMPARE(model.run_count(), 1);
    const Run& run = model.run(0);
    QCOMPARE(run.name, QStringLiteral("a"));
    QCOMPARE(run.status, RunStatus::Finished);
    QCOMPARE(run.points("loss", SeriesKind::Step), kSampleLossSteps);
    QCOMPARE(run.points("loss", SeriesKind::Epoch), kSampleLossEpochs);
    QCOMPARE(run.points("loss", SeriesKind::Validation), kSampleValLoss);
    QCOMPARE(run.points("accuracy", SeriesKind::Step), kSampleAccuracySteps);
    QCOMPARE(run.points("accuracy", SeriesKind::Validation), kSampleValAccuracy);
    QCOMPARE(run.points("examples_per_sec", SeriesKind::Step), kSampleSpeedSteps);
    QCOMPARE(run.points("examples_per_sec", SeriesKind::Epoch), kSampleSpeedEpochs);
    QCOMPARE(run.points("learning_rate", SeriesKind::Step), kSampleRateSteps);
    QVERIFY(run.points("val_loss", SeriesKind::Validation).isEmpty());
    // Chart order: loss first, examples/sec and learning rate last, whatever order they came in.
    QCOMPARE(model.quantities(), QStringList({"loss", "accuracy", "examples_per_sec", "learning_rate"}));
    QCOMPARE(quantities.count(), 4);
    QCOMPARE(run.epochs, 2);
    QCOMPARE(run.step, 4);
    QCOMPARE(run.loss.value_or(0), 0.5);
    QCOMPARE(model.data(model.index(0, RunModel::Status)).toString(), QStringLiteral("finished"));
    QCOMPARE(model.data(model.index(0, RunModel::Epoch)).toString(), QStringLiteral("2/2"));
    QCOMPARE(model.data(model.index(0, RunModel::Loss)).toString(), QStringLiteral("0.5"));
    QCOMPARE(model.data(model.index(0, RunModel::ExamplesPerSec)).toString(), QStringLiteral("1250"));
  }

  void runs_are_kept_apart_and_a_repeated_feed_adds_no_points() {
    RunModel model;
    const QByteArray a = sample_run("a", false);
    feed(model, a);
    feed(model, sample_run("b"));
    feed(model, a.mid(a.indexOf('\n') + 1));  // the same events again (a file and a connection), train_begin aside
    QCOMPARE(model.run_count(), 2);
    QCOMPARE(model.find("a")->points("loss", SeriesKind::Step), kSampleLossSteps);
    QCOMPARE(model.find("a")->points("loss", SeriesKind::Epoch), kSampleLossEpochs);
    QCOMPARE(model.find("a")->status, RunStatus::Running);
    QCOMPARE(model.find("b")->status, RunStatus::Finished);
    QVERIFY(model.run(0).color != model.run(1).color);
  }

  void a_lost_run_fails_and_comes_back_if_it_speaks_again() {
    RunModel model;
    feed(model, sample_run("a", false));
    model.lose("a", "trainer process 12 is gone");
    QCOMPARE(model.find("a")->status, RunStatus::Failed);
    QCOMPARE(model.data(model.index(0, RunModel::Status), Qt::ToolTipRole).toString(),
             QStringLiteral("trainer process 12 is gone"));
    feed(model, R"({"event": "batch", "run": "a", "epoch": 2, "step": 5, "loss": 0.4})" "\n");
    QCOMPARE(model.find("a")->status, RunStatus::Running);
    feed(model, R"({"event": "train_end", "run": "a", "status": "failed"})" "\n");
    QCOMPARE(model.find("a")->status, RunStatus::Failed);
    model.lose("a", "later");  // a finished or failed run stays as it is
    QCOMPARE(model.find("a")->reason, QStringLiteral("train_end says failed"));
  }

  void a_run_that_starts_over_opens_a_new_run_which_later_events_feed() {
    RunModel model;
    feed(model, sample_run("a", false));  // a train_begin before the last step: a new run, even without train_end
    feed(model, R"({"event": "train_begin", "run": "a", "step": 0})" "\n"
                R"({"event": "batch", "run": "a", "epoch": 0, "step": 1, "loss": 3.0})" "\n");
    QCOMPARE(model.run_count(), 2);
    QCOMPARE(model.run(0).points("loss", SeriesKind::Step), kSampleLossSteps);
    QCOMPARE(model.run(0).status, RunStatus::Failed);
    QCOMPARE(model.run(0).reason, QStringLiteral("started again"));
    QCOMPARE(model.run(1).name, QStringLiteral("a #2"));
    QCOMPARE(model.run(1).points("loss", SeriesKind::Step), QList<QPointF>({{1, 3.0}}));
    QCOMPARE(model.find("a"), &model.run(1));
  }

  void non_finite_values_show_in_the_row_but_are_not_plotted() {
    RunModel model;
    feed(model, R"({"event": "batch", "run": "a", "step": 1, "loss": 1.0})" "\n"
                R"({"event": "batch", "run": "a", "step": 2, "loss": NaN})" "\n");
    QCOMPARE(model.run(0).points("loss", SeriesKind::Step), QList<QPointF>({{1, 1.0}}));
    QCOMPARE(model.data(model.index(0, RunModel::Loss)).toString(), QStringLiteral("nan"));
  }

  void views_hear_of_new_values_in_batches() {
    RunModel model;
    feed(model, R"({"event": "train_begin", "run": "a"})" "\n");
    QTest::qWait(2 * RunModel::notify_interval_ms);
    QSignalSpy rows(&model, &RunModel::dataChanged);
    QSignalSpy series(&model, &RunModel::series_changed);
    QByteArray text;
    for (int step = 1; step <= 100; ++step)
      text += R"({"event": "batch", "run": "a", "step": )" + QByteArray::number(step) + R"(, "loss": 1.0, "acc": 0.5})" "\n";
    feed(model, text);
    QCOMPARE(rows.count(), 0);
    QCOMPARE(series.count(), 0);
    QTRY_COMPARE(rows.count(), 1);
    QCOMPARE(series.count(), 2);  // loss and acc, once each
    QCOMPARE(model.run(0).points("acc", SeriesKind::Step).size(), 100);
  }

  void unchecking_a_run_hides_it() {
    RunModel model;
    feed(model, sample_run("a"));
    QSignalSpy changed(&model, &RunModel::series_changed);
    QVERIFY(model.setData(model.index(0, RunModel::Name), Qt::Unchecked, Qt::CheckStateRole));
    QVERIFY(!model.run(0).visible);
    QCOMPARE(changed.count(), 4);
  }
};

TOWER_QT_TEST(RunModelTest);

}  // namespace tower::monitor

#include "run_model_test.moc"
