#include "gui/socket_event_server.h"

#include <QProcess>
#include <QSignalSpy>
#include <QTcpSocket>
#include <QTest>

#include "gui/run_model.h"
#include "tests/gui/qt_test.h"
#include "tests/gui/sample_run.h"

namespace tower::monitor {

using namespace testing;

namespace {

struct Monitor {
  RunModel model;
  SocketEventServer server;
  qint64 malformed = 0;

  Monitor() {
    QObject::connect(&server, &SocketEventServer::source_opened, &model, [this](EventSource* source) {
      model.attach(source);
      QObject::connect(source, &EventSource::line_malformed, &model, [this] { ++malformed; });
    });
  }
};

}  // namespace

class SocketEventServerTest : public QObject {
  Q_OBJECT

 private slots:
  void events_sent_over_a_connection_become_points_of_the_right_series() {
    Monitor m;
    QVERIFY(m.server.listen(0));
    QVERIFY(m.server.address().startsWith("127.0.0.1:"));
    QTcpSocket trainer;
    trainer.connectToHost(QHostAddress::LocalHost, m.server.port());
    QVERIFY(trainer.waitForConnected(5000));
    QByteArray text = sample_run("socket-run");
    text.insert(text.indexOf("\n") + 1, "this is not an event\n");
    // In pieces that cut lines, as a network delivers them.
    for (qsizetype at = 0; at < text.size(); at += 37) {
      trainer.write(text.mid(at, 37));
      trainer.flush();
    }
    QTRY_COMPARE(m.model.run_count(), 1);
    QTRY_COMPARE(m.model.run(0).status, RunStatus::Finished);
    const Run& run = m.model.run(0);
    QCOMPARE(run.points("loss", SeriesKind::Step), kSampleLossSteps);
    QCOMPARE(run.points("loss", SeriesKind::Epoch), kSampleLossEpochs);
    QCOMPARE(run.points("loss", SeriesKind::Validation), kSampleValLoss);
    QCOMPARE(run.points("accuracy", SeriesKind::Step), kSampleAccuracySteps);
    QCOMPARE(run.points("examples_per_sec", SeriesKind::Step), kSampleSpeedSteps);
    QCOMPARE(run.points("learning_rate", SeriesKind::Step), kSampleRateSteps);
    QCOMPARE(m.malformed, 1);
    trainer.disconnectFromHost();
    QTest::qWait(100);
    QCOMPARE(m.model.run(0).status, RunStatus::Finished);  // it said train_end before closing
  }

  void a_connection_that_closes_before_train_end_fails_its_runs() {
    Monitor m;
    QVERIFY(m.server.listen(0));
    QTcpSocket trainer;
    trainer.connectToHost(QHostAddress::LocalHost, m.server.port());
    QVERIFY(trainer.waitForConnected(5000));
    trainer.write(sample_run("cut-off", false));
    QTRY_COMPARE(m.model.run_count(), 1);
    QTRY_COMPARE(m.model.run(0).points("loss", SeriesKind::Step).size(), 4);
    QCOMPARE(m.model.run(0).status, RunStatus::Running);
    trainer.abort();
    QTRY_COMPARE(m.model.run(0).status, RunStatus::Failed);
    QCOMPARE(m.model.run(0).reason, QStringLiteral("connection closed before train_end"));
  }

  void several_trainers_at_once_are_overlaid_as_runs() {
    Monitor m;
    QVERIFY(m.server.listen(0));
    QTcpSocket a, b;
    a.connectToHost(QHostAddress::LocalHost, m.server.port());
    b.connectToHost(QHostAddress::LocalHost, m.server.port());
    QVERIFY(a.waitForConnected(5000) && b.waitForConnected(5000));
    a.write(sample_run("a"));
    b.write(sample_run("b"));
    QTRY_COMPARE(m.model.run_count(), 2);
    QTRY_VERIFY(m.model.find("a") && m.model.find("a")->status == RunStatus::Finished);
    QTRY_VERIFY(m.model.find("b") && m.model.find("b")->status == RunStatus::Finished);
    QCOMPARE(m.model.find("b")->points("loss", SeriesKind::Epoch), kSampleLossEpochs);
  }

  // A real trainer (tests/gui/live_trainer.cpp: fit() with a LiveMonitor) that finishes, and one that is
  // killed after 4 of its 6 batches.
  void a_real_trainer_that_finishes_is_finished_and_one_that_dies_is_failed() {
    Monitor m;
    QVERIFY(m.server.listen(0));
    QProcess finishing, dying;
    finishing.start(TOWER_TEST_TRAINER, {QString::number(m.server.port()), "finishing"});
    dying.start(TOWER_TEST_TRAINER, {QString::number(m.server.port()), "dying", "4"});
    QTRY_VERIFY_WITH_TIMEOUT(finishing.state() == QProcess::NotRunning && dying.state() == QProcess::NotRunning, 60000);
    QCOMPARE(finishing.exitStatus(), QProcess::NormalExit);
    QCOMPARE(finishing.exitCode(), 0);
    QCOMPARE(dying.exitStatus(), QProcess::CrashExit);

    QTRY_VERIFY(m.model.find("finishing") && m.model.find("finishing")->status == RunStatus::Finished);
    const Run& done = *m.model.find("finishing");
    QCOMPARE(done.points("loss", SeriesKind::Step).size(), 6);
    QCOMPARE(done.points("loss", SeriesKind::Epoch).size(), 2);
    QCOMPARE(done.points("mean_absolute_error", SeriesKind::Step).size(), 6);
    QCOMPARE(done.points("learning_rate", SeriesKind::Step).first().y(), 0.1);
    QCOMPARE(done.points("loss", SeriesKind::Epoch).last().x(), 6.0);
    QVERIFY(done.points("examples_per_sec", SeriesKind::Step).first().y() > 0);

    QTRY_VERIFY(m.model.find("dying") && m.model.find("dying")->status == RunStatus::Failed);
    const Run& dead = *m.model.find("dying");
    QCOMPARE(dead.reason, QStringLiteral("connection closed before train_end"));
    QCOMPARE(dead.points("loss", SeriesKind::Step).size(), 4);
    QCOMPARE(dead.points("loss", SeriesKind::Epoch).size(), 1);  // epoch 0 ended after batch 3
    QCOMPARE(m.malformed, 0);
  }
};

TOWER_QT_TEST(SocketEventServerTest);

}  // namespace tower::monitor

#include "socket_event_server_test.moc"
