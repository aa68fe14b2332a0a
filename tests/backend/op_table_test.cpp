// Runs the op table (op_table.h): the CPU backend against the naive references, every GPU against the CPU,
// and checks that the table and the CUDA backend cover every op that backend.h declares.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/backend/backend.h"
#include "api/core/device.h"
#include "api/core/random.h"
#include "api/core/tensor.h"
#include "backend/op_table.h"

namespace tower::testing {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The op names class Backend declares (its virtual functions, device() aside).
std::set<std::string> backend_ops() {
  const std::string header = read(fs::path(TOWER_SOURCE_DIR) / "api/backend/backend.h");
  const std::size_t begin = header.find("class Backend {");
  const std::size_t end = header.find("\n};", begin);
  const std::string body = header.substr(begin, end - begin);
  std::set<std::string> ops;
  const std::regex virtual_function(R"(virtual\s+[^;(~]*?\b(\w+)\s*\()");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), virtual_function); it != std::sregex_iterator(); ++it)
    if ((*it)[1] != "device") ops.insert((*it)[1]);
  return ops;
}

// Inputs and the outputs' initial contents of case `index`, the same on every backend.
OpBuffers inputs_of(const OpCase& c, std::size_t index) {
  OpBuffers b;
  Generator g(1000 + index);
  for (std::size_t k = 0; k < c.in_sizes.size(); ++k) {
    std::vector<float> v(static_cast<std::size_t>(c.in_sizes[k]));
    for (float& x : v) x = g.uniform(c.low, c.high);
    if (k == 0 && c.distinct_inputs)
      for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = c.low + (c.high - c.low) * static_cast<float>((i * 7919) % v.size()) / static_cast<float>(v.size());
    b.in.push_back(v);
  }
  for (Index n : c.out_sizes) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& x : v) x = g.uniform(-1.f, 1.f);
    b.out.push_back(v);
  }
  return b;
}

// Runs the case on `device`'s backend: the arrays go to the device, the op runs, the outputs come back.
void run_on(const OpCase& c, Device device, OpBuffers& b) {
  std::vector<Tensor> in, out;
  std::vector<float*> in_ptrs, out_ptrs;
  for (const auto& v : b.in) {
    in.push_back(Tensor::from_vector(v, Shape{static_cast<Index>(v.size())}).to(device));
    in_ptrs.push_back(in.back().data<float>());
  }
  for (const auto& v : b.out) {
    out.push_back(Tensor::from_vector(v, Shape{static_cast<Index>(v.size())}).to(device));
    out_ptrs.push_back(out.back().data<float>());
  }
  c.run(backend::get(device), in_ptrs, out_ptrs);
  for (std::size_t k = 0; k < out.size(); ++k) b.out[k] = out[k].to_vector();
}

// Empty when every output is within the case's tolerance, else the first element that is not.
std::string compare(const OpCase& c, const OpBuffers& got, const OpBuffers& want) {
  for (std::size_t k = 0; k < want.out.size(); ++k)
    for (std::size_t i = 0; i < want.out[k].size(); ++i) {
      const double g = got.out[k][i], w = want.out[k][i];
      const bool same_nan = std::isnan(g) && std::isnan(w);
      if (same_nan || std::fabs(g - w) <= c.tolerance * std::max(1.0, std::fabs(w))) continue;
      std::ostringstream s;
      s << c.label << ": output " << k << "[" << i << "] is " << g << ", expected " << w << " (tolerance "
        << c.tolerance << ")";
      return s.str();
    }
  return {};
}

// Ops whose arguments are lists of tensors or device-resident double accumulators rather than float arrays: each
// is run on a GPU against the CPU by the *_CUDA test named here, and against scalar references on the CPU by
// tests/backend/optimizer_updates_test.cpp and loss_functors_test.cpp. The step capture runs on a GPU in the
// test named for it.
const std::map<std::string, std::string>& ops_tested_elsewhere() {
  static const std::map<std::string, std::string> m = {
      {"apply_update", "OptimizerUpdates.GpuUpdatesMatchTheCpu_CUDA"},
      {"clip_gradients", "OptimizerUpdates.GpuClippingMatchesTheCpu_CUDA"},
      {"loss_forward", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"loss_backward", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"loss_backward_through_softmax", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"example_weights", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"loss_scale", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"masked_loss_weights", "MaskedTraining.LossesAndMetricsOnTheGpuMatchTheCpu_CUDA"},
      {"masked_metric_weights", "MaskedTraining.LossesAndMetricsOnTheGpuMatchTheCpu_CUDA"},
      {"accumulate_weighted_sum", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"accumulate_penalty", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"add_penalty_gradient", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"update_mean_metric", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"update_threshold_counts", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"update_auc", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"update_column_sums", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"update_confusion_matrix", "LossesOnTheGpu.EveryLossAndMetricMatchesTheCpu_CUDA"},
      {"find_invalid_class", "LossesOnTheGpu.FindInvalidClassMatchesTheCpu_CUDA"},
      {"add_doubles", "LossesOnTheGpu.MergedAndScalarMetricStatesMatchTheCpu_CUDA"},
      {"add_to_doubles", "LossesOnTheGpu.MergedAndScalarMetricStatesMatchTheCpu_CUDA"},
      {"begin_capture", "CapturedSteps.ACapturedPlanDrawsNewMasksOnEveryReplay_CUDA"},
      {"end_capture", "CapturedSteps.ACapturedPlanDrawsNewMasksOnEveryReplay_CUDA"},
  };
  return m;
}

bool test_exists(const std::string& full_name) {
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
    for (int j = 0; j < suite.total_test_count(); ++j)
      if (std::string(suite.name()) + "." + suite.GetTestInfo(j)->name() == full_name) return true;
  }
  return false;
}

TEST(OpTable, NamesEveryOpOfTheBackend) {
  const std::set<std::string> ops = backend_ops();
  ASSERT_GT(ops.size(), 20u) << "could not read the ops of api/backend/backend.h";
  std::set<std::string> covered;
  for (const OpCase& c : op_table()) {
    EXPECT_TRUE(ops.count(c.op)) << c.label << " names '" << c.op << "', which backend.h does not declare";
    covered.insert(c.op);
  }
  for (const auto& [op, test] : ops_tested_elsewhere()) {
    EXPECT_TRUE(ops.count(op)) << "'" << op << "' is not an op of backend.h";
    EXPECT_TRUE(test_exists(test)) << op << " is said to be tested on a GPU by " << test << ", which does not exist";
    covered.insert(op);
  }
  for (const std::string& op : ops) EXPECT_TRUE(covered.count(op)) << "the op table has no case for Backend::" << op;
}

TEST(OpTable, TheCpuBackendMatchesTheReferences) {
  const std::vector<OpCase> table = op_table();
  for (std::size_t i = 0; i < table.size(); ++i) {
    OpBuffers got = inputs_of(table[i], i), want = got;
    run_on(table[i], Device::cpu(), got);
    table[i].reference(want);
    const std::string error = compare(table[i], got, want);
    EXPECT_TRUE(error.empty()) << error;
  }
}

// The CPU backend splits dense products over its threads by the rows of W (dense_product in cpu_backend.cpp):
// the same references on one, two and three threads, three leaving a thread no rows of the 2 x 20000 kernel.
TEST(OpTable, TheCpuDenseProductsMatchTheReferencesOnOneToThreeThreads) {
  const std::vector<OpCase> table = op_table();
  const int threads = backend::num_threads();
  for (const int n : {1, 2, 3}) {
    backend::set_num_threads(n);
    for (std::size_t i = 0; i < table.size(); ++i) {
      if (table[i].op != "dense_product") continue;
      OpBuffers got = inputs_of(table[i], i), want = got;
      run_on(table[i], Device::cpu(), got);
      table[i].reference(want);
      const std::string error = compare(table[i], got, want);
      EXPECT_TRUE(error.empty()) << n << " threads: " << error;
    }
  }
  backend::set_num_threads(threads);
}

TEST(OpTable, EveryGpuMatchesTheCpu_CUDA) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no GPU";
  const std::vector<OpCase> table = op_table();
  for (int gpu = 0; gpu < cuda_device_count(); ++gpu)
    for (std::size_t i = 0; i < table.size(); ++i) {
      OpBuffers got = inputs_of(table[i], i), want = got;
      try {
        run_on(table[i], Device::cuda(gpu), got);
      } catch (const std::exception& e) {
        ADD_FAILURE() << table[i].label << " on cuda:" << gpu << " threw: " << e.what();
        continue;
      }
      run_on(table[i], Device::cpu(), want);
      const std::string error = compare(table[i], got, want);
      EXPECT_TRUE(error.empty()) << "cuda:" << gpu << " against the CPU: " << error;
    }
}

TEST(OpTable, TheCudaBackendDefinesEveryOp) {
#ifndef TOWER_WITH_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  // The compiler proves the CUDA backend is not abstract (a static_assert in cuda_backend.cpp); this names the
  // file of each op and refuses placeholders.
  std::string sources;
  for (const auto& entry : fs::directory_iterator(fs::path(TOWER_SOURCE_DIR) / "api/backend/cuda")) {
    const std::string text = read(entry.path());
    EXPECT_EQ(text.find("not implemented"), std::string::npos) << entry.path() << " has a placeholder";
    sources += text;
  }
  for (const std::string& op : backend_ops())
    EXPECT_NE(sources.find("CudaBackend::" + op + "("), std::string::npos)
        << "api/backend/cuda defines no CudaBackend::" << op;
#endif
}

}  // namespace
}  // namespace tower::testing
