#pragma once
// Helpers for the experiment-runner tests: fresh directories, weight comparisons, located-error checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "api/core/tensor.h"
#include "tools/experiment/document.h"

namespace tower::experiment::testing {

// An empty directory named after the running test, under the system's temporary directory.
inline std::filesystem::path fresh_dir(const std::string& tag = "") {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path d = std::filesystem::temp_directory_path() /
                                  ("tower_tools_" + std::string(info->test_suite_name()) + "_" + info->name() + tag +
                                   "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d;
}

// Bitwise equality of two weight lists.
inline void expect_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::vector<float> va = a[i].to_vector(), vb = b[i].to_vector();
    ASSERT_EQ(va.size(), vb.size()) << "weight " << i;
    std::size_t differ = 0;
    for (std::size_t k = 0; k < va.size(); ++k) differ += va[k] != vb[k];
    EXPECT_EQ(differ, 0u) << "weight " << i << ": " << differ << " of " << va.size() << " elements differ, e.g. "
                          << va[0] << " vs " << vb[0];
  }
}

// Runs f, which must throw ExperimentError at file:line:column (line 0: any) with every part in its message.
inline void expect_error_at(const std::function<void()>& f, const std::string& file, int line, int column,
                            const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no ExperimentError; expected one at " << file << ":" << line << ":" << column;
  } catch (const ExperimentError& e) {
    EXPECT_EQ(e.mark().file, file) << e.what();
    if (line > 0) {
      EXPECT_EQ(e.mark().line, line) << e.what();
      EXPECT_EQ(e.mark().column, column) << e.what();
    }
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "'" << p << "' not in: " << e.what();
  }
}

}  // namespace tower::experiment::testing
