#include "gui/event_source.h"

#include <QSignalSpy>
#include <QTest>

#include "tests/gui/qt_test.h"

namespace tower::monitor {

class EventSourceTest : public QObject {
  Q_OBJECT

 private slots:
  void a_line_counts_once_its_newline_arrives_whatever_the_pieces() {
    const QByteArray text =
        "{\"event\": \"batch\", \"run\": \"a\", \"step\": 1, \"loss\": 2.5}\n"
        "\n"
        "{\"event\": \"batch\", \"run\": \"a\", \"step\": 2, \"loss\": 2.0}\n";
    EventSource source("bytes");
    QSignalSpy events(&source, &EventSource::event_read);
    for (char c : text.left(text.size() - 1)) source.feed(QByteArray(1, c));
    QCOMPARE(events.count(), 1);  // the second line still lacks its newline
    source.feed("\n");
    QCOMPARE(events.count(), 2);
    QCOMPARE(events[1][0].value<Event>().step, 2);
    QCOMPARE(events[1][0].value<Event>().values.first().second, 2.0);
    QCOMPARE(source.lines(), 2);
    QCOMPARE(source.malformed(), 0);
  }

  void a_malformed_line_is_skipped_counted_and_reported_with_its_number() {
    EventSource source("run/events.jsonl");
    QSignalSpy events(&source, &EventSource::event_read);
    QSignalSpy malformed(&source, &EventSource::line_malformed);
    source.feed("{\"event\": \"train_begin\", \"run\": \"a\"}\n"
                "{\"event\": \"batch\", \"run\": \"a\", \"step\": 1, \"loss\": 2.5}\n"
                "{\"event\": \"batch\", \"run\": \"a\", \"step\": 2, \"lo\n"
                "{\"event\": \"batch\", \"run\": \"a\", \"step\": 3, \"loss\": 1.5}\n");
    QCOMPARE(events.count(), 3);
    QCOMPARE(events[2][0].value<Event>().step, 3);
    QCOMPARE(source.malformed(), 1);
    QCOMPARE(malformed.count(), 1);
    QVERIFY2(source.last_error().startsWith("run/events.jsonl:3: not JSON"), qPrintable(source.last_error()));
  }

  void finish_loses_the_runs_without_train_end_and_counts_an_unfinished_line() {
    EventSource source("peer");
    QSignalSpy lost(&source, &EventSource::run_lost);
    source.feed("{\"event\": \"train_begin\", \"run\": \"done\", \"pid\": 7}\n"
                "{\"event\": \"train_begin\", \"run\": \"cut\"}\n"
                "{\"event\": \"train_end\", \"run\": \"done\"}\n"
                "{\"event\": \"batch\", \"run\": \"cut\", \"st");
    QCOMPARE(source.runs().value("done"), 7);
    QVERIFY(source.ended("done"));
    source.finish("connection closed");
    QCOMPARE(lost.count(), 1);
    QCOMPARE(lost[0][0].toString(), QStringLiteral("cut"));
    QCOMPARE(lost[0][1].toString(), QStringLiteral("connection closed"));
    QCOMPARE(source.malformed(), 1);
    QVERIFY2(source.last_error().endsWith("unfinished last line"), qPrintable(source.last_error()));
    source.finish("again");
    QCOMPARE(lost.count(), 1);  // once per run
  }
};

TOWER_QT_TEST(EventSourceTest);

}  // namespace tower::monitor

#include "event_source_test.moc"
