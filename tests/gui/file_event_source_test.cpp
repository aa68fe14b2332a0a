#include "gui/file_event_source.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <unistd.h>

#include "gui/run_model.h"
#include "tests/gui/qt_test.h"
#include "tests/gui/sample_run.h"

namespace tower::monitor {

using namespace testing;

namespace {

void write(const QString& path, const QByteArray& text, QIODevice::OpenMode mode = QIODevice::WriteOnly) {
  QFile file(path);
  QVERIFY(file.open(mode));
  QCOMPARE(file.write(text), text.size());
}

// The id of a process that has exited.
qint64 dead_pid() {
  QProcess process;
  process.start("/bin/true", {});
  process.waitForStarted();
  const qint64 pid = process.processId();
  process.waitForFinished();
  return pid;
}

}  // namespace

class FileEventSourceTest : public QObject {
  Q_OBJECT

 private slots:
  void a_run_directory_is_replayed_into_the_right_series_skipping_a_malformed_line() {
    QTemporaryDir dir;
    QByteArray text = sample_run("fashion");
    text.insert(text.indexOf("\n") + 1, "{\"event\": \"batch\", \"run\": \"fashion\", \"loss\": }\n");
    write(dir.filePath("events.jsonl"), text);
    RunModel model;
    FileEventSource source(dir.path(), {.follow = false});
    model.attach(&source);
    QVERIFY(source.start());
    QCOMPARE(source.path(), dir.filePath("events.jsonl"));
    QCOMPARE(source.malformed(), 1);
    QVERIFY2(source.last_error().contains("events.jsonl:2: not JSON"),
             qPrintable(source.last_error()));
    QCOMPARE(model.run_count(), 1);
    const Run& run = model.run(0);
    QCOMPARE(run.status, RunStatus::Finished);
    QCOMPARE(run.points("loss", SeriesKind::Step), kSampleLossSteps);
    QCOMPARE(run.points("loss", SeriesKind::Validation), kSampleValLoss);
    QCOMPARE(run.points("examples_per_sec", SeriesKind::Epoch), kSampleSpeedEpochs);
  }

  void a_followed_file_is_read_as_it_grows_never_half_a_line() {
    QTemporaryDir dir;
    const QString path = dir.filePath("events.jsonl");
    const QByteArray text = sample_run("live", true, ::getpid());
    const qsizetype cut = text.indexOf("\"loss\": 0.8");  // inside the second batch line
    write(path, text.left(cut));
    RunModel model;
    FileEventSource source(path, {.poll_interval_ms = 20});
    model.attach(&source);
    QVERIFY(source.start());
    QCOMPARE(model.run(0).points("loss", SeriesKind::Step), kSampleLossSteps.mid(0, 1));
    write(path, text.mid(cut), QIODevice::Append);
    QTRY_COMPARE(model.run(0).points("loss", SeriesKind::Step), kSampleLossSteps);
    QCOMPARE(source.malformed(), 0);
    QCOMPARE(model.run(0).status, RunStatus::Finished);
  }

  void a_file_that_does_not_exist_yet_is_waited_for() {
    QTemporaryDir dir;
    RunModel model;
    FileEventSource source(dir.path(), {.poll_interval_ms = 20});
    model.attach(&source);
    QVERIFY(source.start());
    write(dir.filePath("events.jsonl"), sample_run("late"));
    QTRY_COMPARE(model.run_count(), 1);
    FileEventSource missing(dir.filePath("nothing.jsonl"), {.follow = false});
    QVERIFY(!missing.start());
    QVERIFY(missing.error().endsWith("nothing.jsonl: no such file"));
  }

  void events_without_a_run_name_belong_to_the_run_directory() {
    QTemporaryDir dir;
    QDir(dir.path()).mkpath("cnn");
    write(dir.filePath("cnn/events.jsonl"), R"({"event": "batch", "run": "", "step": 1, "loss": 1.5})" "\n");
    RunModel model;
    FileEventSource source(dir.filePath("cnn"), {.follow = false});
    model.attach(&source);
    QVERIFY(source.start());
    QCOMPARE(model.run(0).name, QStringLiteral("cnn"));
    QCOMPARE(model.run(0).points("loss", SeriesKind::Step), QList<QPointF>({{1, 1.5}}));
  }

  void a_run_whose_trainer_process_died_is_failed() {
    QTemporaryDir dir;
    const qint64 pid = dead_pid();
    write(dir.filePath("events.jsonl"), sample_run("crashed", false, pid));
    RunModel model;
    FileEventSource source(dir.path(), {.follow = false});
    model.attach(&source);
    QVERIFY(source.start());
    QCOMPARE(model.run(0).status, RunStatus::Failed);
    QCOMPARE(model.run(0).reason, QStringLiteral("trainer process %1 is gone").arg(pid));
    QCOMPARE(model.data(model.index(0, RunModel::Status)).toString(), QStringLiteral("failed"));
  }

  void a_run_whose_trainer_lives_is_running_until_its_file_is_silent_too_long() {
    QTemporaryDir dir;
    write(dir.filePath("events.jsonl"), sample_run("alive", false, ::getpid()));
    RunModel model;
    FileEventSource source(dir.path(), {.poll_interval_ms = 50, .stale_after = 0.5});
    model.attach(&source);
    QVERIFY(source.start());
    QCOMPARE(model.run(0).status, RunStatus::Running);
    QTRY_COMPARE_WITH_TIMEOUT(model.run(0).status, RunStatus::Failed, 5000);
    QVERIFY2(model.run(0).reason.startsWith("no events for"), qPrintable(model.run(0).reason));
    // It speaks again: running again.
    write(dir.filePath("events.jsonl"), R"({"event": "batch", "run": "alive", "step": 5, "loss": 0.1})" "\n",
          QIODevice::Append);
    QTRY_COMPARE(model.run(0).status, RunStatus::Running);
  }
};

TOWER_QT_TEST(FileEventSourceTest);

}  // namespace tower::monitor

#include "file_event_source_test.moc"
