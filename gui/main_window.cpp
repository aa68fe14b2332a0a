#include "gui/main_window.h"

#include <QApplication>
#include <QCursor>
#include <QDir>
#include <QFileDialog>
#include <QHeaderView>
#include <QMenuBar>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QVBoxLayout>

namespace tower::monitor {

MainWindow::MainWindow(RunModel* model, FileEventSourceOptions file_options, QWidget* parent)
    : QMainWindow(parent), model_(model), file_options_(file_options) {
  setWindowTitle(QStringLiteral("Tower monitor"));
  run_list_ = new QTableView;
  run_list_->setModel(model_);
  run_list_->verticalHeader()->hide();
  run_list_->setSelectionBehavior(QAbstractItemView::SelectRows);
  // Sized to the contents when a run arrives and when its row changes (the model tells at most every
  // RunModel::notify_interval_ms), not by ResizeToContents, which measures every cell's text at each event and
  // costs more than the rest of the monitor.
  run_list_->setWordWrap(false);
  run_list_->horizontalHeader()->setMinimumSectionSize(64);
  run_list_->setSelectionMode(QAbstractItemView::NoSelection);
  run_list_->setFocusPolicy(Qt::NoFocus);

  auto* charts = new QWidget;
  auto* charts_layout = new QVBoxLayout(charts);
  charts_layout->setContentsMargins(0, 0, 0, 0);
  auto* key = new QLabel(QStringLiteral(
      "<span style='color:#777'>──</span> thin: per step &nbsp;&nbsp; <b>━●━</b> thick: per epoch &nbsp;&nbsp; "
      "<b>╍●╍</b> dashed: validation &nbsp;&nbsp; colour: the run (see the list) &nbsp;&nbsp; "
      "mouse over a chart: read-out &nbsp;&nbsp; right click: export as PNG"));
  key->setContentsMargins(6, 2, 6, 2);
  charts_layout->addWidget(key);
  grid_ = new QGridLayout;
  charts_layout->addLayout(grid_, 1);
  auto* scroll = new QScrollArea;
  scroll->setWidget(charts);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);

  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(run_list_);
  splitter->addWidget(scroll);
  splitter->setStretchFactor(0, 0);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({120, 780});
  setCentralWidget(splitter);

  status_ = new QLabel;
  statusBar()->addWidget(status_, 1);

  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  file->addAction(QStringLiteral("&Open run…"), QKeySequence::Open, this, &MainWindow::open_run_dialog);
  file->addAction(QStringLiteral("&Export chart under mouse as PNG…"), QKeySequence(QStringLiteral("Ctrl+E")), this,
                  &MainWindow::export_chart_dialog);
  file->addAction(QStringLiteral("Export &all charts as PNG…"), this, &MainWindow::export_all_dialog);
  file->addSeparator();
  file->addAction(QStringLiteral("&Quit"), QKeySequence::Quit, qApp, &QApplication::quit);

  connect(model_, &RunModel::quantity_added, this, &MainWindow::add_chart);
  connect(model_, &RunModel::rowsInserted, this, [this] {
    run_list_->resizeColumnsToContents();
    update_status();
  });
  connect(model_, &RunModel::dataChanged, run_list_, &QTableView::resizeColumnsToContents);
  for (const QString& q : model_->quantities()) add_chart(q);
  resize(1440, 900);
  update_status();
}

void MainWindow::watch(EventSource* source) {
  connect(source, &EventSource::line_malformed, this, [this](const QString& message) {
    ++malformed_;
    last_malformed_ = message;
    update_status();
  });
}

bool MainWindow::open_run(const QString& path) {
  auto* source = new FileEventSource(path, file_options_, this);
  model_->attach(source);
  watch(source);
  if (!source->start()) {
    statusBar()->showMessage(source->error(), 10000);
    source->deleteLater();
    return false;
  }
  files_ << source->path();
  update_status();
  return true;
}

void MainWindow::set_listening(const QString& text) {
  listening_ = text;
  update_status();
}

ChartView* MainWindow::chart(const QString& quantity) const {
  for (ChartView* c : charts_)
    if (c->quantity() == quantity) return c;
  return nullptr;
}

QList<ChartView*> MainWindow::charts() const { return charts_; }

void MainWindow::add_chart(const QString& quantity) {
  if (chart(quantity)) return;
  charts_ << new ChartView(model_, quantity);
  lay_out_charts();
}

void MainWindow::lay_out_charts() {
  const QStringList order = model_->quantities();
  std::sort(charts_.begin(), charts_.end(),
            [&](ChartView* a, ChartView* b) { return order.indexOf(a->quantity()) < order.indexOf(b->quantity()); });
  for (ChartView* c : charts_) grid_->removeWidget(c);
  for (int i = 0; i < charts_.size(); ++i) grid_->addWidget(charts_[i], i / 2, i % 2);
}

QString MainWindow::status_text() const {
  QStringList parts;
  if (!listening_.isEmpty()) parts << listening_;
  for (const QString& f : files_) parts << QStringLiteral("following %1").arg(QDir::toNativeSeparators(f));
  parts << QStringLiteral("%1 run%2").arg(model_->run_count()).arg(model_->run_count() == 1 ? "" : "s");
  if (malformed_ > 0)
    parts << QStringLiteral("%1 malformed line%2 skipped (last: %3)")
                 .arg(malformed_)
                 .arg(malformed_ == 1 ? "" : "s")
                 .arg(last_malformed_);
  return parts.join(QStringLiteral(" · "));
}

void MainWindow::update_status() { status_->setText(status_text()); }

void MainWindow::refresh() {
  run_list_->resizeColumnsToContents();
  for (ChartView* c : charts_) c->refresh();
}

bool MainWindow::save_snapshot(const QString& path) {
  refresh();
  QCoreApplication::processEvents();  // charts lay out their axes in the event loop
  return grab().save(path, "PNG");
}

int MainWindow::export_all(const QString& directory) {
  int written = 0;
  for (ChartView* c : charts_) written += c->save_png(QDir(directory).filePath(c->quantity() + ".png")) ? 1 : 0;
  return written;
}

void MainWindow::open_run_dialog() {
  const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Open run directory"));
  if (!dir.isEmpty()) open_run(dir);
}

void MainWindow::export_chart_dialog() {
  ChartView* target = nullptr;
  for (ChartView* c : charts_)
    if (c->rect().contains(c->mapFromGlobal(QCursor::pos()))) target = c;
  if (!target && !charts_.isEmpty()) target = charts_.first();
  if (!target) return;
  const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export chart"), target->quantity() + ".png",
                                                    QStringLiteral("PNG images (*.png)"));
  if (!path.isEmpty() && !target->save_png(path)) statusBar()->showMessage("cannot write " + path, 10000);
}

void MainWindow::export_all_dialog() {
  const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Export all charts to"));
  if (dir.isEmpty()) return;
  statusBar()->showMessage(QStringLiteral("%1 charts written to %2").arg(export_all(dir)).arg(dir), 10000);
}

}  // namespace tower::monitor
