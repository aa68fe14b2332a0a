#pragma once
// MainWindow: the run list (status, epoch, step, loss, examples/sec; uncheck a run to hide it) above a key to
// the line styles and a grid of charts, one per quantity, added as quantities appear (in
// RunModel::quantities() order). The status bar
// says where events come from and how many malformed lines were skipped. File menu: open a run directory,
// export the chart under the mouse or all charts as PNG.
#include <QGridLayout>
#include <QLabel>
#include <QMainWindow>
#include <QTableView>

#include "gui/chart_view.h"
#include "gui/event_source.h"
#include "gui/file_event_source.h"
#include "gui/run_model.h"

namespace tower::monitor {

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(RunModel* model, FileEventSourceOptions file_options = {}, QWidget* parent = nullptr);

  // Counts the source's malformed lines in the status bar (the model is fed separately, RunModel::attach).
  void watch(EventSource* source);
  // Opens and follows a run directory or events file; false (and a status message) when it cannot be read.
  bool open_run(const QString& path);
  // Shown in the status bar: "listening on 127.0.0.1:7470", "not listening: ...".
  void set_listening(const QString& text);

  ChartView* chart(const QString& quantity) const;
  QList<ChartView*> charts() const;
  QTableView* run_list() const { return run_list_; }
  qint64 malformed_lines() const { return malformed_; }
  QString status_text() const;
  // Draws every chart's pending changes now.
  void refresh();
  // Renders the whole window (run list and charts) to a PNG; false when the file cannot be written.
  bool save_snapshot(const QString& path);
  // Writes each chart as "<directory>/<quantity>.png"; returns the number written.
  int export_all(const QString& directory);

 private:
  void add_chart(const QString& quantity);
  void lay_out_charts();
  void update_status();
  void open_run_dialog();
  void export_chart_dialog();
  void export_all_dialog();

  RunModel* model_;
  FileEventSourceOptions file_options_;
  QTableView* run_list_;
  QGridLayout* grid_;
  QList<ChartView*> charts_;
  QLabel* status_;
  QString listening_;
  QStringList files_;
  qint64 malformed_ = 0;
  QString last_malformed_;
};

}  // namespace tower::monitor
