#pragma once
// The monitor's QtTest classes share one executable. QtTest runs one class per qExec, so each test file
// registers its class here and test_main.cpp runs them (all, or the one named by the first argument):
//   TOWER_QT_TEST(EventTest)
#include <QObject>
#include <QString>
#include <functional>
#include <utility>
#include <vector>

namespace tower::monitor::testing {

using TestFactory = std::pair<QString, std::function<QObject*()>>;
std::vector<TestFactory>& registered_tests();
bool register_test(const QString& name, std::function<QObject*()> make);

}  // namespace tower::monitor::testing

#define TOWER_QT_TEST(Class)                                                                          \
  static const bool tower_qt_test_##Class = ::tower::monitor::testing::register_test(#Class, [] {    \
    return static_cast<QObject*>(new Class);                                                          \
  })
