// tower-monitor: live charts of training runs.
//   tower-monitor [--port N | --no-listen] [RUN_DIR | events.jsonl]...
//       listens for LiveMonitor connections on 127.0.0.1:N (default 7470) and follows each run given
//   tower-monitor --snapshot RUN_DIR... OUT.png [--size WxH]
//       renders the runs' charts to OUT.png without a display and exits
#include <QApplication>
#include <QCommandLineParser>
#include <QRegularExpression>
#include <cstdio>

#include "gui/main_window.h"
#include "gui/run_model.h"
#include "gui/socket_event_server.h"

using namespace tower::monitor;

namespace {

int fail(const QString& message) {
  std::fprintf(stderr, "tower-monitor: %s\n", qPrintable(message));
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Snapshots need no display: pick the offscreen platform before Qt looks for one.
  for (int i = 1; i < argc; ++i)
    if (qstrcmp(argv[i], "--snapshot") == 0 && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
      qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("tower-monitor"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Live charts of Tower training runs."));
  parser.addHelpOption();
  const QCommandLineOption port({"p", "port"}, "Listen for LiveMonitor connections on 127.0.0.1:<port>.", "port",
                                QString::number(SocketEventServer::kDefaultPort));
  const QCommandLineOption no_listen("no-listen", "Do not listen for connections; only follow the runs given.");
  const QCommandLineOption snapshot("snapshot", "Render the runs' charts to the PNG file given last, and exit.");
  const QCommandLineOption size("size", "Snapshot size in pixels.", "WxH", "1440x900");
  const QCommandLineOption stale_after("stale-after",
                                       "A followed run without train_end whose file is silent this long has failed.",
                                       "seconds", "300");
  parser.addOptions({port, no_listen, snapshot, size, stale_after});
  parser.addPositionalArgument("runs", "Run directories or events.jsonl files to replay and follow.",
                               "[RUN_DIR...] [OUT.png]");
  parser.process(app);

  QStringList runs = parser.positionalArguments();
  FileEventSourceOptions file_options;
  bool ok = false;
  file_options.stale_after = parser.value(stale_after).toDouble(&ok);
  if (!ok || file_options.stale_after < 0) return fail("--stale-after needs a number of seconds");

  RunModel model;
  if (parser.isSet(snapshot)) {
    if (runs.size() < 2) return fail("--snapshot needs RUN_DIR... OUT.png");
    const QString out = runs.takeLast();
    const QRegularExpressionMatch wh = QRegularExpression("^(\\d+)x(\\d+)$").match(parser.value(size));
    if (!wh.hasMatch()) return fail("--size needs WxH, e.g. 1440x900");
    file_options.follow = false;
    MainWindow window(&model, file_options);
    window.resize(wh.captured(1).toInt(), wh.captured(2).toInt());
    for (const QString& run : runs)
      if (!window.open_run(run)) return fail(FileEventSource::events_file(run) + ": cannot be read");
    window.show();
    QApplication::processEvents();
    window.refresh();
    if (!window.save_snapshot(out)) return fail(out + ": cannot be written");
    std::printf("%s: %d run(s), %lld malformed line(s) skipped\n", qPrintable(out), model.run_count(),
                static_cast<long long>(window.malformed_lines()));
    return 0;
  }

  MainWindow window(&model, file_options);
  SocketEventServer server;
  if (!parser.isSet(no_listen)) {
    const int p = parser.value(port).toInt(&ok);
    if (!ok || p < 0 || p > 65535) return fail("--port needs a number in 0..65535");
    QObject::connect(&server, &SocketEventServer::source_opened, &window, [&](EventSource* source) {
      model.attach(source);
      window.watch(source);
    });
    if (server.listen(quint16(p))) window.set_listening("listening on " + server.address());
    else window.set_listening(QStringLiteral("not listening (port %1: %2)").arg(p).arg(server.error()));
  }
  for (const QString& run : runs) window.open_run(run);
  window.show();
  return QApplication::exec();
}
