// A custom training step against fit's on the convnet of bench_convnet.h (Adam 1e-3, sparse cross-entropy):
//   fit             model.fit over a dataset of fixed batches (fit's own step)
//   train_step      the same fit with train_step overridden by a GradientTape step (ModelImpl::train_step)
//   tape loop       a loop of GradientTape + Optimizer::apply_gradients over the same batches, no fit
// Configurations are timed in interleaved rounds, so a load change on a shared machine hits all of them alike;
// each reports the median round's examples per wall-clock second and per second of process CPU time (less
// sensitive to other processes on a shared machine), and their ratios to fit's. Prints one JSON line per
// configuration. The device is the model's default (TOWER_DEVICE, else GPU 0, else the CPU).
//   bench_custom_step [rounds=5] [steps_per_round=10] [batch=64]
#include <tower/tower.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "bench_convnet.h"
#include "bench_stats.h"

using namespace tower;
using bench::median;

namespace {

class TapeStepModel : public ModelImpl {
 public:
  using ModelImpl::ModelImpl;
  void train_step(const data::Element& batch) override {
    GradientTape tape;
    Tensor probs = tape.call(*this, batch[0]);
    Tensor loss = tape.loss(training_loop().losses()[0], batch[1], probs);
    const std::vector<VariablePtr>& vars = trainable_weights();
    optimizer()->apply_gradients(optimizers::zip(tape.gradient(loss, vars), vars));
    training_loop().track_loss(loss, batch[0].dim(0));
  }
};

struct Run {
  std::string name;
  std::function<void(const data::Dataset&)> run;
  std::vector<double> rates, cpu_rates;
};

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  const Index batch = argc > 3 ? std::atoi(argv[3]) : 64;
  set_random_seed(1);

  Generator g(2);
  Tensor x({batch * steps, 28, 28, 1});
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch * steps));
  for (Index i = 0; i < x.numel(); ++i) x.data<float>()[i] = g.uniform(0.f, 1.f);
  for (auto& l : labels) l = static_cast<std::int32_t>(g.uniform(0.f, 10.f)) % 10;
  const Tensor y = Tensor::from_vector(labels, {batch * steps});
  const data::Dataset data = data::Dataset::from_tensor_slices({x, y}).batch(batch).cache();

  Model fit_model = bench::batch_norm_convnet();
  Model base = bench::batch_norm_convnet();
  Model step_model(std::make_shared<TapeStepModel>(base.inputs(), base.outputs(), "tape_step"));
  Model loop_model = bench::batch_norm_convnet();
  for (Model* m : {&fit_model, &step_model, &loop_model})
    m->compile(optimizers::Adam(1e-3), losses::SparseCategoricalCrossentropy());
  losses::LossPtr loss_fn = losses::SparseCategoricalCrossentropy();
  FitOptions options;
  options.verbose = 0;

  std::vector<Run> configs;
  configs.push_back({"fit", [&](const data::Dataset& d) { fit_model.fit(d, options); }, {}});
  configs.push_back({"train_step override", [&](const data::Dataset& d) { step_model.fit(d, options); }, {}});
  configs.push_back({"tape loop", [&](const data::Dataset& d) {
                       auto it = d.make_iterator();
                       const std::vector<VariablePtr> vars = loop_model.trainable_weights();
                       while (auto b = it->next()) {
                         GradientTape tape;
                         Tensor loss = tape.loss(loss_fn, (*b)[1], tape.call(loop_model, (*b)[0]));
                         loop_model.optimizer()->apply_gradients(optimizers::zip(tape.gradient(loss, vars), vars));
                       }
                       // Like fit's end of epoch, wait for the device's queued work.
                       (void)loop_model.get_weights();
                     },
                     {}});
  for (Run& c : configs) c.run(data);  // warm-up: plans, slots, caches
  for (int r = 0; r < rounds; ++r)
    for (Run& c : configs) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_seconds();
      c.run(data);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      c.rates.push_back(static_cast<double>(batch * steps) / s);
      c.cpu_rates.push_back(static_cast<double>(batch * steps) / (cpu_seconds() - c0));
    }
  const double base_rate = median(configs[0].rates), base_cpu = median(configs[0].cpu_rates);
  for (const Run& c : configs)
    std::printf("{\"config\": \"%s\", \"device\": \"%s\", \"batch\": %lld, \"examples_per_sec\": %.1f, "
                "\"ratio_to_fit\": %.3f, \"examples_per_cpu_sec\": %.1f, \"cpu_ratio_to_fit\": %.3f}\n",
                c.name.c_str(), fit_model.device().to_string().c_str(), static_cast<long long>(batch),
                median(c.rates), median(c.rates) / base_rate, median(c.cpu_rates), median(c.cpu_rates) / base_cpu);
}
