#include "gui/event.h"

#include <QTest>
#include <cmath>

#include "tests/gui/qt_test.h"

namespace tower::monitor {

class EventTest : public QObject {
  Q_OBJECT

 private slots:
  void parses_a_batch_line_keeping_the_value_order() {
    const auto e = Event::parse(R"({"event": "batch", "run": "r1", "epoch": 2, "step": 17, "loss": 0.5,)"
                                R"( "accuracy": 0.25, "examples_per_sec": 1000.0, "learning_rate": 0.125,)"
                                R"( "time": 1500000000.5})");
    QVERIFY(e);
    QCOMPARE(e->kind, Event::Kind::Batch);
    QCOMPARE(e->run, QStringLiteral("r1"));
    QCOMPARE(e->epoch, 2);
    QCOMPARE(e->step, 17);
    QCOMPARE(e->time, 1500000000.5);
    const QList<QPair<QString, double>> expected = {
        {"loss", 0.5}, {"accuracy", 0.25}, {"examples_per_sec", 1000.0}, {"learning_rate", 0.125}};
    QCOMPARE(e->values, expected);
    QCOMPARE(e->value("accuracy"), std::optional<double>(0.25));
    QCOMPARE(e->value("val_loss"), std::optional<double>());
  }

  void reads_train_begin_and_train_end_fields() {
    const auto begin = Event::parse(R"({"event": "train_begin", "run": "r", "epochs": 5, "steps": 469, "pid": 42})");
    QVERIFY(begin);
    QCOMPARE(begin->kind, Event::Kind::TrainBegin);
    QCOMPARE(begin->step, -1);  // not given
    QCOMPARE(begin->value("epochs"), std::optional<double>(5));
    QCOMPARE(begin->value("pid"), std::optional<double>(42));
    const auto end = Event::parse(R"({"event": "train_end", "run": "r", "status": "failed"})");
    QVERIFY(end);
    QCOMPARE(end->kind, Event::Kind::TrainEnd);
    QCOMPARE(end->status, QStringLiteral("failed"));
  }

  void reads_python_style_non_finite_numbers_outside_strings_only() {
    const auto e = Event::parse(
        R"({"event": "epoch", "run": "NaN Infinity", "loss": NaN, "val_loss": Infinity, "x": -Infinity, "step": 3})");
    QVERIFY(e);
    QCOMPARE(e->run, QStringLiteral("NaN Infinity"));
    QVERIFY(std::isnan(*e->value("loss")));
    QCOMPARE(*e->value("val_loss"), qInf());
    QCOMPARE(*e->value("x"), -qInf());
    QCOMPARE(e->step, 3);
  }

  void rejects_malformed_lines_saying_why() {
    const QList<QPair<QByteArray, QString>> cases = {
        {R"({"event": "batch", "run": "r", "loss": 0.5)", "not JSON"},
        {R"(["batch"])", "not a JSON object"},
        {R"({"run": "r"})", "no \"event\" string"},
        {R"({"event": "checkpoint", "run": "r"})", "unknown event \"checkpoint\""},
        {R"({"event": "batch"})", "no \"run\" string"},
        {R"({"event": "batch", "run": 3})", "no \"run\" string"},
        {R"({"event": "batch", "run": "r", "epoch": 1.5})", "\"epoch\" is not an integer"},
        {R"({"event": "batch", "run": "r", "step": "7"})", "\"step\" is not an integer"},
    };
    for (const auto& [line, why] : cases) {
      QString error;
      QVERIFY2(!Event::parse(line, &error), line.constData());
      QVERIFY2(error.startsWith(why), qPrintable(line + " -> " + error));
    }
  }
};

TOWER_QT_TEST(EventTest);

}  // namespace tower::monitor

#include "event_test.moc"
