#include "gui/event.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tower::monitor {

namespace {

// Marks for the non-standard number literals; they cannot occur in a real JSON string (a raw control
// character must be escaped there).
constexpr char kNaN[] = "\x01NaN";
constexpr char kInf[] = "\x01Infinity";
constexpr char kNegInf[] = "\x01-Infinity";

// Rewrites bare NaN, Infinity and -Infinity outside strings as marked strings QJsonDocument accepts.
QByteArray quote_non_finite(const QByteArray& line) {
  QByteArray out;
  out.reserve(line.size() + 16);
  bool in_string = false;
  for (qsizetype i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < line.size()) out += line[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    const QByteArray rest = QByteArray::fromRawData(line.constData() + i, line.size() - i);
    bool replaced = false;
    for (const auto& [literal, mark] : {std::pair{"-Infinity", kNegInf}, {"Infinity", kInf}, {"NaN", kNaN}}) {
      if (!rest.startsWith(literal)) continue;
      out += '"';
      out += mark;
      out += '"';
      i += qsizetype(std::strlen(literal)) - 1;
      replaced = true;
      break;
    }
    if (!replaced) out += c;
  }
  return out;
}

std::optional<double> number(const QJsonValue& v) {
  if (v.isDouble()) return v.toDouble();
  if (v.isString()) {
    const QString s = v.toString();
    if (s == QLatin1String(kNaN)) return std::numeric_limits<double>::quiet_NaN();
    if (s == QLatin1String(kInf)) return std::numeric_limits<double>::infinity();
    if (s == QLatin1String(kNegInf)) return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

std::optional<Event> fail(QString* error, const QString& why) {
  if (error) *error = why;
  return std::nullopt;
}

}  // namespace

std::optional<double> Event::value(const QString& key) const {
  for (const auto& [k, v] : values)
    if (k == key) return v;
  return std::nullopt;
}

std::optional<Event> Event::parse(const QByteArray& line, QString* error) {
  QJsonParseError parse_error;
  QJsonDocument doc = QJsonDocument::fromJson(line, &parse_error);
  if (parse_error.error != QJsonParseError::NoError && (line.contains("NaN") || line.contains("Infinity")))
    doc = QJsonDocument::fromJson(quote_non_finite(line), &parse_error);
  if (parse_error.error != QJsonParseError::NoError)
    return fail(error, QStringLiteral("not JSON (%1 at offset %2)").arg(parse_error.errorString()).arg(parse_error.offset));
  if (!doc.isObject()) return fail(error, QStringLiteral("not a JSON object"));
  const QJsonObject object = doc.object();

  Event e;
  const QJsonValue kind = object.value(QLatin1String("event"));
  if (!kind.isString()) return fail(error, QStringLiteral("no \"event\" string"));
  const QString k = kind.toString();
  if (k == QLatin1String("batch")) e.kind = Kind::Batch;
  else if (k == QLatin1String("epoch")) e.kind = Kind::Epoch;
  else if (k == QLatin1String("train_begin")) e.kind = Kind::TrainBegin;
  else if (k == QLatin1String("train_end")) e.kind = Kind::TrainEnd;
  else return fail(error, QStringLiteral("unknown event \"%1\"").arg(k));
  const QJsonValue run = object.value(QLatin1String("run"));
  if (!run.isString()) return fail(error, QStringLiteral("no \"run\" string"));
  e.run = run.toString();

  const auto integer = [&](const char* key, qint64 fallback, qint64* out) {
    const QJsonValue v = object.value(QLatin1String(key));
    if (v.isUndefined()) {
      *out = fallback;
      return true;
    }
    const double d = v.toDouble(std::numeric_limits<double>::quiet_NaN());
    if (!v.isDouble() || d != std::floor(d)) return false;
    *out = qint64(d);
    return true;
  };
  qint64 epoch = 0;
  if (!integer("epoch", 0, &epoch)) return fail(error, QStringLiteral("\"epoch\" is not an integer"));
  if (!integer("step", -1, &e.step)) return fail(error, QStringLiteral("\"step\" is not an integer"));
  e.epoch = int(epoch);
  if (const QJsonValue t = object.value(QLatin1String("time")); t.isDouble()) e.time = t.toDouble();
  if (const QJsonValue s = object.value(QLatin1String("status")); s.isString()) e.status = s.toString();

  // QJsonObject sorts its keys; the line's own order is what a reader expects (loss first, then metrics).
  static const QStringList reserved = {"event", "run", "epoch", "step", "time", "status"};
  QList<QPair<qsizetype, QString>> keys;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (reserved.contains(it.key()) || !number(it.value())) continue;
    keys.append({line.indexOf('"' + it.key().toUtf8() + '"'), it.key()});
  }
  std::sort(keys.begin(), keys.end());
  for (const auto& [position, key] : keys) e.values.append({key, *number(object.value(key))});
  return e;
}

}  // namespace tower::monitor
