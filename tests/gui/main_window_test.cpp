#include "gui/main_window.h"

#include <QDir>
#include <QFile>
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include "tests/gui/qt_test.h"
#include "tests/gui/sample_run.h"

namespace tower::monitor {

using namespace testing;

namespace {

QString write_run(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
  QDir(dir.path()).mkpath(name);
  QFile file(dir.filePath(name + "/events.jsonl"));
  if (!file.open(QIODevice::WriteOnly)) return {};
  file.write(text);
  return dir.filePath(name);
}

}  // namespace

class MainWindowTest : public QObject {
  Q_OBJECT

 private slots:
  void a_chart_per_quantity_in_order_and_malformed_lines_in_the_status_bar() {
    QTemporaryDir dir;
    const QString run = write_run(dir, "r", sample_run("r") + "garbage\n");
    RunModel model;
    MainWindow window(&model, {.follow = false});
    QVERIFY(window.open_run(run));
    QStringList quantities;
    for (ChartView* c : window.charts()) quantities << c->quantity();
    QCOMPARE(quantities, QStringList({"loss", "accuracy", "examples_per_sec", "learning_rate"}));
    QCOMPARE(window.malformed_lines(), 1);
    QVERIFY2(window.status_text().contains("1 run · 1 malformed line skipped (last: "), qPrintable(window.status_text()));
    QVERIFY(window.status_text().contains("events.jsonl:9: not JSON"));
    QCOMPARE(window.run_list()->model()->rowCount(), 1);
    QVERIFY(!window.open_run(dir.filePath("missing")));
  }

  void snapshots_and_exports_are_pngs() {
    QTemporaryDir dir;
    RunModel model;
    MainWindow window(&model, {.follow = false});
    QVERIFY(window.open_run(write_run(dir, "a", sample_run("a"))));
    QVERIFY(window.open_run(write_run(dir, "b", sample_run("b"))));
    window.resize(1200, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.save_snapshot(dir.filePath("window.png")));
    QCOMPARE(QImage(dir.filePath("window.png")).size(), QSize(1200, 800));
    QCOMPARE(window.export_all(dir.path()), 4);
    for (const char* q : {"loss", "accuracy", "examples_per_sec", "learning_rate"})
      QVERIFY2(!QImage(dir.filePath(QString(q) + ".png")).isNull(), q);
  }

  // The command a README picture is made with: no display needed.
  void the_snapshot_command_renders_a_run_directory() {
    QTemporaryDir dir;
    const QString run = write_run(dir, "finished", sample_run("finished"));
    const QString out = dir.filePath("out.png");
    QProcess monitor;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("QT_QPA_PLATFORM");  // --snapshot must pick offscreen itself
    env.remove("DISPLAY");
    monitor.setProcessEnvironment(env);
    monitor.start(TOWER_MONITOR_BIN, {"--snapshot", run, out, "--size", "900x600"});
    QVERIFY(monitor.waitForFinished(60000));
    QCOMPARE(monitor.exitCode(), 0);
    QVERIFY2(QString(monitor.readAllStandardOutput()).contains("1 run(s), 0 malformed line(s) skipped"),
             "tower-monitor --snapshot reported something else");
    QCOMPARE(QImage(out).size(), QSize(900, 600));
    monitor.start(TOWER_MONITOR_BIN, {"--snapshot", dir.filePath("nowhere"), out});
    QVERIFY(monitor.waitForFinished(60000));
    QCOMPARE(monitor.exitCode(), 2);
  }
};

TOWER_QT_TEST(MainWindowTest);

}  // namespace tower::monitor

#include "main_window_test.moc"
