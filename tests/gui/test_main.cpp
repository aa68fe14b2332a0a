// Runs the registered QtTest classes: all of them, or only the one named by the first argument (the rest of
// the arguments go to QtTest). Meant for QT_QPA_PLATFORM=offscreen, as ctest sets it.
#include <QApplication>
#include <QTest>
#include <cstdio>
#include <memory>

#include "tests/gui/qt_test.h"

namespace tower::monitor::testing {

std::vector<TestFactory>& registered_tests() {
  static std::vector<TestFactory> tests;
  return tests;
}

bool register_test(const QString& name, std::function<QObject*()> make) {
  registered_tests().emplace_back(name, std::move(make));
  return true;
}

}  // namespace tower::monitor::testing

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QStringList args = app.arguments();
  QString only;
  if (args.size() > 1 && !args[1].startsWith('-')) only = args.takeAt(1);
  int failures = 0, ran = 0;
  for (const auto& [name, make] : tower::monitor::testing::registered_tests()) {
    if (!only.isEmpty() && name != only) continue;
    std::unique_ptr<QObject> test(make());
    failures += QTest::qExec(test.get(), args);
    ++ran;
  }
  if (ran == 0) {
    std::fprintf(stderr, "no test class named %s\n", qPrintable(only));
    return 2;
  }
  return failures == 0 ? 0 : 1;
}
