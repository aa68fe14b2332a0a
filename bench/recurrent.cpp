// Forward + backward time of LSTM and GRU layers over a sequence (batch 64, 100 steps, 128 features, 128 units,
// float32, training mode, input gradients too): the last step's output, and every step's (return_sequences).
// Prints one JSON object per line: {"layer": ..., "ms": median milliseconds per forward+backward}.
// Run through bench/recurrent.sh, which runs torch.nn.LSTM / GRU on the same shapes and thread count.
#include <tower/tower.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

using namespace tower;

namespace {

constexpr Index kBatch = 64, kSteps = 100, kFeatures = 128;
constexpr int kUnits = 128;

struct Case {
  const char* name;
  std::function<LayerPtr()> make;
};

double median_ms(Plan& plan, int warmup, int iters) {
  std::vector<double> times;
  for (int i = 0; i < warmup + iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    plan.forward();
    plan.backward();
    // A GPU runs the step asynchronously: reading the gradients back waits for it.
    if (!plan.options().device.is_cpu()) (void)plan.flat_grads().to(Device::cpu());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= warmup) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 10;
  const std::vector<Case> cases = {
      {"lstm_last", [] { return LayerPtr(layers::LSTM({.units = kUnits})); }},
      {"lstm_sequences", [] { return LayerPtr(layers::LSTM({.units = kUnits, .return_sequences = true})); }},
      {"gru_last", [] { return LayerPtr(layers::GRU({.units = kUnits})); }},
      {"gru_sequences", [] { return LayerPtr(layers::GRU({.units = kUnits, .return_sequences = true})); }},
  };
  for (const Case& c : cases) {
    LayerPtr layer = c.make();
    auto in = Input({kSteps, kFeatures});
    Model model(in, (*layer)(in));
    PlanOptions o;
    o.batch_size = kBatch;
    o.training = true;
    o.backward = true;
    o.input_gradients = true;  // a layer inside a network also computes its input gradient
    o.device = default_device();  // TOWER_DEVICE, else the CPU
    model.to(o.device);
    Plan plan(model.impl(), o);
    Tensor x(Shape{kBatch, kSteps, kFeatures});
    Generator g(1);
    float* px = x.data<float>();
    for (Index i = 0; i < x.numel(); ++i) px[i] = g.uniform(-1.f, 1.f);
    const Tensor on_device = x.to(o.device);
    plan.set_input(0, on_device);
    plan.forward();
    plan.output_grad(0).fill(0.01f);
    const double ms = median_ms(plan, 2, iters);
    std::printf("{\"layer\": \"%s\", \"ms\": %.3f, \"threads\": %d}\n", c.name, ms, backend::num_threads());
    std::fflush(stdout);
  }
  return 0;
}
