#include "gui/socket_event_server.h"

#include <QTcpSocket>

namespace tower::monitor {

SocketEventServer::SocketEventServer(QObject* parent) : QObject(parent) {
  connect(&server_, &QTcpServer::newConnection, this, &SocketEventServer::accept_pending);
}

bool SocketEventServer::listen(quint16 port, const QHostAddress& address) { return server_.listen(address, port); }

QString SocketEventServer::address() const {
  if (!server_.isListening()) return {};
  return QStringLiteral("%1:%2").arg(server_.serverAddress().toString()).arg(server_.serverPort());
}

void SocketEventServer::accept_pending() {
  while (QTcpSocket* socket = server_.nextPendingConnection()) {
    auto* source = new EventSource(QStringLiteral("%1:%2").arg(socket->peerAddress().toString()).arg(socket->peerPort()), this);
    socket->setParent(source);
    emit source_opened(source);
    connect(socket, &QTcpSocket::readyRead, source, [socket, source] { source->feed(socket->readAll()); });
    connect(socket, &QTcpSocket::disconnected, source, [socket, source] {
      source->feed(socket->readAll());
      source->finish(QStringLiteral("connection closed before train_end"));
      source->deleteLater();
    });
    // Bytes that came with the connection, before the signals were connected.
    if (socket->bytesAvailable() > 0) source->feed(socket->readAll());
  }
}

}  // namespace tower::monitor
