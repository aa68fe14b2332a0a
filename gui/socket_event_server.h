#pragma once
// SocketEventServer: listens on the loopback interface for LiveMonitor connections
// (api/callbacks/live_monitor.h) and makes an EventSource of each, named "<peer address>:<peer port>".
// Any number of trainers may be connected at once. When a connection closes, every run it carried that
// sent no train_end is lost ("connection closed before train_end": the trainer died or fit() threw).
#include <QHostAddress>
#include <QTcpServer>

#include "gui/event_source.h"

namespace tower::monitor {

class SocketEventServer : public QObject {
  Q_OBJECT

 public:
  static constexpr quint16 kDefaultPort = 7470;  // LiveMonitorOptions::kDefaultPort

  explicit SocketEventServer(QObject* parent = nullptr);

  // Port 0 picks a free port (see port()). Returns false, with error(), when the port cannot be had.
  bool listen(quint16 port = kDefaultPort, const QHostAddress& address = QHostAddress::LocalHost);
  quint16 port() const { return server_.serverPort(); }
  QString error() const { return server_.errorString(); }
  // "127.0.0.1:7470" while listening, empty otherwise.
  QString address() const;

 signals:
  // A new connection's source, before any of its events; it is deleted some time after the connection closes.
  void source_opened(tower::monitor::EventSource* source);

 private:
  void accept_pending();

  QTcpServer server_;
};

}  // namespace tower::monitor
