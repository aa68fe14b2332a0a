#pragma once
// The message of an expected exception, for tests of error texts.
#include <exception>
#include <string>
#include <utility>

namespace tower::testing {

// The message of the exception of type E (any std::exception by default) that f throws, or "(no exception)". An
// exception of another type propagates and fails the test.
template <class E = std::exception, class F>
std::string error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const E& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace tower::testing
