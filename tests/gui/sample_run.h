#pragma once
// A short run in the events.jsonl format, and the points it must become: 2 epochs of 2 batches, with
// accuracy, validation, examples/sec and a learning rate halved after the first epoch.
#include <QByteArray>
#include <QList>
#include <QPointF>
#include <QString>

namespace tower::monitor::testing {

// `pid` 0 leaves "pid" out of train_begin; without `end` the run has no train_end.
inline QByteArray sample_run(const QString& run, bool end = true, qint64 pid = 0) {
  const QByteArray r = run.toUtf8();
  QByteArray text;
  text += R"({"event": "train_begin", "run": ")" + r + R"(", "epoch": 0, "step": 0, "epochs": 2, "steps": 2)" +
          (pid ? ", \"pid\": " + QByteArray::number(pid) : QByteArray()) + R"(, "time": 1767000000.0})" + "\n";
  const auto batch = [&](int epoch, int step, const char* loss, const char* acc, const char* speed, const char* lr) {
    text += R"({"event": "batch", "run": ")" + r + R"(", "epoch": )" + QByteArray::number(epoch) +
            R"(, "step": )" + QByteArray::number(step) + R"(, "loss": )" + loss + R"(, "accuracy": )" + acc +
            R"(, "examples_per_sec": )" + speed + R"(, "learning_rate": )" + lr + R"(, "time": 1767000001.0})" + "\n";
  };
  const auto epoch_end = [&](int epoch, int step, const char* rest) {
    text += R"({"event": "epoch", "run": ")" + r + R"(", "epoch": )" + QByteArray::number(epoch) + R"(, "step": )" +
            QByteArray::number(step) + ", " + rest + R"(, "time": 1767000002.0})" + "\n";
  };
  batch(0, 1, "0.9", "0.5", "1000.0", "0.01");
  batch(0, 2, "0.8", "0.6", "1100.0", "0.01");
  epoch_end(0, 2, R"("loss": 0.8, "accuracy": 0.6, "val_loss": 0.85, "val_accuracy": 0.55, "examples_per_sec": 1050.0, "learning_rate": 0.01)");
  batch(1, 3, "0.6", "0.7", "1200.0", "0.005");
  batch(1, 4, "0.5", "0.8", "1300.0", "0.005");
  epoch_end(1, 4, R"("loss": 0.5, "accuracy": 0.8, "val_loss": 0.65, "val_accuracy": 0.75, "examples_per_sec": 1250.0, "learning_rate": 0.005)");
  if (end) text += R"({"event": "train_end", "run": ")" + r + R"(", "epoch": 1, "step": 4, "time": 1767000003.0})" "\n";
  return text;
}

inline const QList<QPointF> kSampleLossSteps = {{1, 0.9}, {2, 0.8}, {3, 0.6}, {4, 0.5}};
inline const QList<QPointF> kSampleLossEpochs = {{2, 0.8}, {4, 0.5}};
inline const QList<QPointF> kSampleValLoss = {{2, 0.85}, {4, 0.65}};
inline const QList<QPointF> kSampleAccuracySteps = {{1, 0.5}, {2, 0.6}, {3, 0.7}, {4, 0.8}};
inline const QList<QPointF> kSampleValAccuracy = {{2, 0.55}, {4, 0.75}};
inline const QList<QPointF> kSampleSpeedSteps = {{1, 1000}, {2, 1100}, {3, 1200}, {4, 1300}};
inline const QList<QPointF> kSampleSpeedEpochs = {{2, 1050}, {4, 1250}};
inline const QList<QPointF> kSampleRateSteps = {{1, 0.01}, {2, 0.01}, {3, 0.005}, {4, 0.005}};

}  // namespace tower::monitor::testing
