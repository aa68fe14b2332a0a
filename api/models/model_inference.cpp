// ModelImpl's inference from any number of threads: predict_on_batch, a call model(x), and predict's batches.
#include <mutex>

#include "api/backend/backend.h"
#include "api/backend/threads_on_this_thread.h"
#include "api/core/device_turn.h"
#include "api/models/model.h"

namespace tower {

void ModelImpl::check_inference_inputs(const std::vector<Tensor>& inputs, const char* what) const {
  const auto who = [&] { return "Model '" + name() + "': " + what + ": "; };
  if (inputs.size() != graph_.inputs.size())
    throw std::invalid_argument(who() + "got " + std::to_string(inputs.size()) + " input(s); the model takes " +
                                std::to_string(graph_.inputs.size()));
  Index n = -1;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    const SymbolicTensor& in = graph_.inputs[i];
    if (!x.defined()) throw std::invalid_argument(who() + "input '" + in.name() + "' is an undefined tensor");
    const Shape& want = in.shape();
    bool fits = x.rank() == want.rank();
    for (int d = 1; fits && d < want.rank(); ++d) fits = want[d] < 0 ? x.dim(d) > 0 : x.dim(d) == want[d];
    if (fits && want[0] >= 0) fits = x.dim(0) == want[0];
    if (!fits)
      throw ShapeError(who() + "input '" + in.name() + "' has shape " + x.shape().to_string() + ", the model expects " +
                       want.to_string());
    if (x.dim(0) == 0) throw std::invalid_argument(who() + "input '" + in.name() + "' is a batch of 0 examples");
    if (n >= 0 && x.dim(0) != n)
      throw std::invalid_argument(who() + "input '" + in.name() + "' has " + std::to_string(x.dim(0)) +
                                  " examples, input '" + graph_.inputs[0].name() + "' " + std::to_string(n));
    n = x.dim(0);
  }
}

std::vector<Tensor> ModelImpl::infer(const std::vector<Tensor>& inputs, bool on_host, const char* what) {
  if (!has_graph() && !inputs.empty() && inputs[0].defined()) build_from(data::Element{inputs[0]});
  // The graph is read after the guard: a Sequential's add() changes it only between calls.
  const detail::ModelUse::Guard use = use_.inference(name(), what);
  require_graph(what);
  check_inference_inputs(inputs, what);
  const Device device = this->device();
  std::unique_lock<std::mutex> gpu;
  if (!device.is_cpu()) gpu = std::unique_lock(device_turn(device));  // one call at a time issues work to a GPU

  std::vector<Shape> shapes;
  for (const Tensor& x : inputs) shapes.push_back(x.shape());
  detail::InferencePlans::Lease lease = inference_plans_.acquire(shapes, [&] {
    PlanOptions o;
    o.batch_size = shapes[0][0];
    o.device = device;
    o.seed = 1;  // inference draws nothing: the global generator is left as it was, however many plans are made
    if (has_unknown_input_sizes()) o.input_shapes = shapes;
    return std::make_unique<Plan>(*this, o);
  });
  Plan& plan = *lease->plan;
  lease->staged.resize(inputs.size());
  lease->staged_host.resize(inputs.size());
  lease->landing.resize(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() == DType::float32 && inputs[i].device() == device) {
      plan.set_input(static_cast<int>(i), inputs[i]);
      continue;
    }
    detail::stage_float32(inputs[i], lease->staged[i], device, lease->staged_host[i], lease->landing[i]);
    plan.set_input(static_cast<int>(i), lease->staged[i]);
  }
  const int threads = plan.unshared_bytes() <= inference_plans_.options().caller_thread_bytes ? 1 : backend::num_threads();
  const backend::ThreadsOnThisThread team(threads);
  plan.forward();
  std::vector<Tensor> outputs;
  for (int o = 0; o < plan.num_outputs(); ++o)
    outputs.push_back(on_host && !device.is_cpu() ? plan.output(o).to(Device::cpu()) : plan.output(o).clone());
  return outputs;
}

std::vector<Tensor> ModelImpl::predict_on_batch(const std::vector<Tensor>& inputs) {
  return infer(inputs, true, "predict_on_batch()");
}

std::vector<Tensor> ModelImpl::call(const std::vector<Tensor>& inputs) { return infer(inputs, false, "a call"); }

void ModelImpl::set_inference_options(const InferenceOptions& options) {
  const detail::ModelUse::Guard use = use_.change();
  inference_plans_.set_options(options);
}

}  // namespace tower
