#include "api/training/training_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "api/core/device_memory.h"
#include "api/core/device_turn.h"
#include "api/metrics/mean.h"
#include "api/models/fit_failure.h"
#include "api/models/model.h"
#include "api/training/progbar_logger.h"

namespace tower::detail {

using callbacks::CallbackPtr;
using callbacks::Logs;

namespace {

// Runs every callback's hook.
template <class Fn>
void each(const std::vector<CallbackPtr>& cbs, Fn fn) {
  for (const CallbackPtr& cb : cbs) fn(*cb);
}

// src on `device`: src itself when it is there (unless `copy`), else a copy in `buffer` (remade when it does not
// fit).
Tensor on_device(const Tensor& src, Device device, Tensor& buffer, bool copy = false) {
  if (src.device() == device && !copy) return src;
  if (!buffer.defined() || buffer.shape() != src.shape() || buffer.dtype() != src.dtype() ||
      buffer.device() != device)
    buffer = Tensor(src.shape(), src.dtype(), device);
  buffer.copy_from(src);
  return buffer;
}

// dst (on a GPU) = host, float32 of the same shape, through `landing`: the upload into the landing buffer waits
// only for the copy out of it that began the previous step (the marker), so it overlaps the rest of that step;
// the GPU then copies it into dst in order with its other work.
void land(const Tensor& host, Tensor& dst, Landing& landing) {
  const Device device = dst.device();
  if (!landing.buffer.defined() || landing.buffer.shape() != host.shape() || !(landing.buffer.device() == device)) {
    landing.buffer = Tensor(host.shape(), DType::float32, device);
    landing.free = std::make_unique<WorkMarker>(device);
    // New memory may be a block that work queued so far still uses: the first upload waits for all of it.
    landing.free->record();
  }
  upload_after(landing.buffer.raw_data(), device, host.data<float>(), static_cast<std::size_t>(host.numel()) * sizeof(float),
               *landing.free);
  dst.copy_from(landing.buffer);
  landing.free->record();
}

}  // namespace

// Host inputs reach a GPU through `landing` (land()).
void stage_float32(const Tensor& src, Tensor& dst, Device device, Tensor& host, Landing& landing) {
  if (!dst.defined() || dst.shape() != src.shape() || dst.device() != device)
    dst = Tensor(src.shape(), DType::float32, device);
  if (src.dtype() == DType::float32) {
    if (!device.is_cpu() && src.device().is_cpu()) land(src, dst, landing);
    else dst.copy_from(src);
    return;
  }
  const Tensor s = src.device().is_cpu() ? src : src.to(Device::cpu());
  if (!device.is_cpu() && (!host.defined() || host.shape() != src.shape())) host = Tensor(src.shape());
  Tensor& converted = device.is_cpu() ? dst : host;
  float* d = converted.data<float>();
  const Index n = s.numel();
  switch (s.dtype()) {
    case DType::uint8: {
      const auto* v = s.data<std::uint8_t>();
      for (Index i = 0; i < n; ++i) d[i] = v[i];
      break;
    }
    case DType::int32: {
      const auto* v = s.data<std::int32_t>();
      for (Index i = 0; i < n; ++i) d[i] = static_cast<float>(v[i]);
      break;
    }
    case DType::int64: {
      const auto* v = s.data<std::int64_t>();
      for (Index i = 0; i < n; ++i) d[i] = static_cast<float>(v[i]);
      break;
    }
    case DType::float32: break;
  }
  if (!device.is_cpu()) land(host, dst, landing);
}

namespace {

// Calls fn(replica, plan) for the training plans of global batches of n: the model's own plan (replica -1), or
// each replica's plan for its rows under a strategy. Makes the plans that do not exist yet.
template <class Fn>
void for_each_plan(ModelImpl& model, Index n, Fn&& fn) {
  // A model of inputs of unknown sizes has a plan per batch shape, made and dropped as the data comes; its plans'
  // random streams (Dropout's) are not part of a checkpoint.
  if (model.has_unknown_input_sizes()) return;
  Replicas* replicas = model.replicas();
  if (!replicas) return fn(-1, model.plan_for(n, true));
  for (int r = 0; r < replicas->num_local(); ++r) {
    const auto [begin, end] = replicas->slice(n, r);
    if (end > begin) fn(r, replicas->plan(r, end - begin, true));
  }
}

}  // namespace

TrainingLoop::TrainingLoop(ModelImpl& model) : model_(model) {}

std::vector<TrainingLoop::PlanRng> TrainingLoop::plan_rngs() {
  std::vector<PlanRng> out;
  for (Index n : trained_batch_sizes_)
    for_each_plan(model_, n, [&](int replica, Plan& plan) {
      out.push_back({n, replica, plan.step_values().seed(), plan.step_values().steps()});
    });
  return out;
}

void TrainingLoop::restore_plan_rngs(const std::vector<PlanRng>& rngs) {
  for (const PlanRng& p : rngs) {
    bool found = false;
    for_each_plan(model_, p.batch_size, [&](int replica, Plan& plan) {
      if (replica != p.replica) return;
      found = true;
      // Only the chief writes backups: another worker's plans keep the seeds derived from their global replicas.
      if (model_.is_chief()) plan.step_values().set_seed(p.seed);
      plan.step_values().set_steps(p.steps);
    });
    // A replica of this strategy may have no rows in batches of this size on this worker (a short last batch), so
    // it has no plan to restore; one this strategy lacks is another strategy's.
    const Replicas* replicas = model_.replicas();
    const bool known = replicas ? p.replica >= 0 && p.replica < replicas->num_local() : p.replica == -1;
    if (!found && !known)
      throw std::runtime_error("it was written under another strategy (it has a plan of replica " +
                               std::to_string(p.replica) + "); resume it with the strategy it was trained with");
    if (std::find(trained_batch_sizes_.begin(), trained_batch_sizes_.end(), p.batch_size) ==
        trained_batch_sizes_.end())
      trained_batch_sizes_.push_back(p.batch_size);
  }
}

void TrainingLoop::compile(optimizers::OptimizerPtr optimizer, std::vector<losses::LossPtr> losses,
                           std::vector<std::vector<metrics::MetricPtr>> metrics, std::vector<double> loss_weights,
                           std::vector<std::vector<metrics::MetricPtr>> weighted_metrics) {
  const std::vector<std::string> names = model_.output_names();
  const std::size_t outputs = names.size();
  const std::string who = "Model '" + model_.name() + "': compile(): ";
  if (!optimizer) throw std::invalid_argument(who + "no optimizer");
  if (losses.size() == 1 && outputs > 1) losses.assign(outputs, losses[0]);
  if (losses.size() != outputs)
    throw std::invalid_argument(who + std::to_string(losses.size()) + " losses for " + std::to_string(outputs) +
                                " outputs");
  for (const auto& l : losses)
    if (!l) throw std::invalid_argument(who + "a loss is null");
  const auto per_output = [&](std::vector<std::vector<metrics::MetricPtr>>& list, const char* what) {
    if (list.empty()) list.resize(outputs);
    if (list.size() == 1 && outputs > 1) {
      // The same metrics on every output, each output with its own instances.
      for (std::size_t o = 1; o < outputs; ++o) {
        std::vector<metrics::MetricPtr> copy;
        for (const auto& m : list[0]) copy.push_back(m->clone());
        list.push_back(copy);
      }
    }
    if (list.size() != outputs)
      throw std::invalid_argument(who + what + " for " + std::to_string(list.size()) + " outputs, the model has " +
                                  std::to_string(outputs));
    for (const auto& ms : list)
      for (const auto& m : ms)
        if (!m) throw std::invalid_argument(who + "a metric of " + what + " is null");
  };
  per_output(metrics, "metrics");
  per_output(weighted_metrics, "weighted_metrics");
  if (loss_weights.empty()) loss_weights.assign(outputs, 1.0);
  if (loss_weights.size() != outputs)
    throw std::invalid_argument(who + std::to_string(loss_weights.size()) + " loss weights for " +
                                std::to_string(outputs) + " outputs");
  optimizer_ = std::move(optimizer);
  losses_ = std::move(losses);
  metrics_ = std::move(metrics);
  weighted_metrics_ = std::move(weighted_metrics);
  loss_weights_ = std::move(loss_weights);
  output_names_ = names;
  loss_sums_.clear();
  loss_count_ = 0;
  buffers_.clear();
  replica_buffers_.clear();
  gathered_.clear();
  step_graphs_.clear();  // the captured steps ran the old losses
}

void TrainingLoop::require_compiled(const char* what) const {
  if (!compiled())
    throw std::logic_error("Model '" + model_.name() + "': " + what + " needs a compiled model: call compile() first");
}

void TrainingLoop::reset_metrics() {
  loss_count_ = 0;
  for (auto& [device, sums] : loss_sums_) sums.zero();
  for (auto* list : {&metrics_, &weighted_metrics_})
    for (auto& ms : *list)
      for (auto& m : ms) m->reset_state();
  for (auto& [name, tracker] : tracked_) tracker->reset_state();
}

losses::detail::DeviceDoubles& TrainingLoop::loss_sums(Device device) {
  for (auto& [d, sums] : loss_sums_)
    if (d == device) return sums;
  return loss_sums_.emplace_back(device, losses::detail::DeviceDoubles(1 + Index(losses_.size()), device)).second;
}

Logs TrainingLoop::logs() const {
  // The read of the log point: the loss sums of every device that has some.
  std::vector<double> sums(1 + losses_.size(), 0.0);
  for (const auto& [device, on_device] : loss_sums_) {
    const std::vector<double> v = on_device.read();
    for (std::size_t k = 0; k < sums.size(); ++k) sums[k] += v[k];
  }
  const auto mean = [&](double sum) { return loss_count_ > 0 ? sum / loss_count_ : 0.0; };
  Logs logs;
  if (loss_count_ > 0 || tracked_.empty()) logs.set("loss", mean(sums[0]));
  const bool several = metrics_.size() > 1;
  if (several)
    for (std::size_t o = 0; o < losses_.size(); ++o) logs.set(output_names_[o] + "_loss", mean(sums[1 + o]));
  for (const auto& [key, metric] : named_metrics()) logs.set(key, metric->result());
  return logs;
}

std::vector<std::pair<std::string, metrics::Direction>> TrainingLoop::log_directions() const {
  std::vector<std::pair<std::string, metrics::Direction>> out;
  if (loss_count_ > 0 || tracked_.empty()) out.emplace_back("loss", metrics::Direction::down);
  if (metrics_.size() > 1)
    for (std::size_t o = 0; o < losses_.size(); ++o)
      out.emplace_back(output_names_[o] + "_loss", metrics::Direction::down);
  for (const auto& [key, metric] : named_metrics()) out.emplace_back(key, metric->direction());
  return out;
}

std::vector<std::pair<std::string, const metrics::Metric*>> TrainingLoop::named_metrics() const {
  // Keras' CompileMetrics.result(): how many times each name is taken so far.
  std::vector<std::pair<std::string, const metrics::Metric*>> out;
  std::map<std::string, int> taken;
  const bool several = metrics_.size() > 1;
  for (const bool weighted : {false, true}) {
    const auto& list = weighted ? weighted_metrics_ : metrics_;
    for (std::size_t o = 0; o < list.size(); ++o) {
      const std::string prefix = several ? output_names_[o] + "_" : "";
      for (const auto& m : list[o]) {
        std::string name = prefix + m->name();
        if (taken.count(name) && weighted) name = prefix + "weighted_" + m->name();
        if (int& count = taken[name]; count++ > 0) name += "_" + std::to_string(count - 1);
        out.emplace_back(std::move(name), m.get());
      }
    }
  }
  for (const auto& [name, tracker] : tracked_) out.emplace_back(name, tracker.get());
  return out;
}

void TrainingLoop::check_batch(const data::Element& batch, Mode mode) const {
  const std::size_t ni = model_.inputs().size(), no = model_.outputs().size();
  if (mode == Mode::predict ? batch.size() < ni : batch.size() != ni + no && batch.size() != ni + no + 1) {
    const std::string expected = mode == Mode::predict ? std::to_string(ni) + " input(s)"
                                                       : std::to_string(ni) + " input(s), " + std::to_string(no) +
                                                             " target(s) and optionally sample weights";
    throw std::invalid_argument("Model '" + model_.name() + "': a batch has " + std::to_string(batch.size()) +
                                " components; expected " + expected);
  }
  const std::size_t checked = mode == Mode::predict ? ni : batch.size();
  const Index n = batch[0].rank() > 0 ? batch[0].dim(0) : -1;
  for (std::size_t i = 0; i < checked; ++i)
    if (batch[i].rank() == 0 || batch[i].dim(0) != n)
      throw std::invalid_argument("Model '" + model_.name() + "': batch component " + std::to_string(i) +
                                  " has shape " + batch[i].shape().to_string() + ", expected " + std::to_string(n) +
                                  " examples like component 0");
  if (mode == Mode::predict || batch.size() == ni + no) return;
  const Tensor& sample_weight = batch[ni + no];
  if (sample_weight.numel() != n || sample_weight.dtype() != DType::float32)
    throw std::invalid_argument("Model '" + model_.name() + "': sample weights of shape " +
                                sample_weight.shape().to_string() + " for a batch of " + std::to_string(n));
}

TrainingLoop::StepBuffers& TrainingLoop::step_buffers(BufferCache& cache, Plan& plan, Mode mode) {
  auto& slot = cache[plan.batch_size()];
  if (!slot) slot = std::make_unique<StepBuffers>();
  // A graph change (Sequential add / pop) keeps the batch size and may change the outputs' shapes.
  bool fits = slot->per_example.size() == losses_.size();
  for (std::size_t o = 0; fits && o < losses_.size(); ++o)
    fits = slot->per_example[o].shape() == losses_[o]->per_example_shape(plan.output(static_cast<int>(o)).shape());
  if (mode != Mode::predict && !fits) {
    slot->per_example.clear();
    slot->scale.clear();
    for (std::size_t o = 0; o < losses_.size(); ++o) {
      const Shape pe = losses_[o]->per_example_shape(plan.output(static_cast<int>(o)).shape());
      slot->per_example.emplace_back(pe, DType::float32, plan.options().device);
      slot->scale.emplace_back(pe, DType::float32, plan.options().device);
    }
  }
  slot->staged_inputs.resize(model_.inputs().size());
  slot->staged_host_inputs.resize(model_.inputs().size());
  slot->landing_inputs.resize(model_.inputs().size());
  return *slot;
}

void TrainingLoop::stage_class_weights(LossInputs& in, Device device) const {
  if (in.class_weight_version == class_weight_version_ && (!in.class_ids.defined() || in.class_ids.device() == device))
    return;
  in.class_weight_version = class_weight_version_;
  in.class_ids = Tensor();
  in.class_weights = {};
  if (class_weight_.empty()) return;
  std::vector<std::int64_t> ids;
  std::vector<double> weights;
  for (const auto& [id, weight] : class_weight_) ids.push_back(id), weights.push_back(weight);
  const Index count = static_cast<Index>(ids.size());
  in.class_ids = Tensor(Shape{count}, DType::int64, device);
  in.class_weights = losses::detail::DeviceDoubles(count, device);
  copy_bytes(in.class_ids.raw_data(), device, ids.data(), Device::cpu(), ids.size() * sizeof(std::int64_t));
  copy_bytes(in.class_weights.data(), device, weights.data(), Device::cpu(), weights.size() * sizeof(double));
}

void TrainingLoop::stage_loss_inputs(LossInputs& in, const data::Element& batch, Index begin, Index end,
                                     Device device, bool training, bool copy) const {
  const std::size_t ni = model_.inputs().size(), no = model_.outputs().size();
  const bool whole = begin == 0 && end == batch[0].dim(0);
  const auto rows = [&](const Tensor& t) { return whole ? t : t.slice(begin, end); };
  in.targets.resize(no);
  in.staged_targets.resize(no);
  in.weights.resize(no);
  in.metric_weights.resize(no);
  in.sample_weight =
      batch.size() > ni + no ? on_device(rows(batch[ni + no]), device, in.staged_sample_weight) : Tensor();
  stage_class_weights(in, device);
  const Index examples = end - begin;
  // Keras turns class_weight into the sample weights of fit's training data only.
  const bool weighted = training && in.class_ids.defined();
  for (std::size_t o = 0; o < no; ++o) {
    in.targets[o] = on_device(rows(batch[ni + o]), device, in.staged_targets[o], copy);
    losses::detail::DeviceDoubles& w = in.weights[o];
    if (!w.defined() || w.size() != examples || w.device() != device)
      w = losses::detail::DeviceDoubles(examples, device);
    const backend::ExampleWeightParams p{.examples = examples,
                                         .sample_weight = losses::detail::any_values(in.sample_weight),
                                         .labels = losses::detail::any_values(in.targets[o]),
                                         .label_size = in.targets[o].numel() / examples,
                                         .class_ids = weighted ? in.class_ids.data<std::int64_t>() : nullptr,
                                         .class_weights = weighted ? in.class_weights.data() : nullptr,
                                         .num_classes_weighted = weighted ? in.class_ids.numel() : 0};
    backend::get(device).example_weights(p, w.data());
    Tensor& mw = in.metric_weights[o];
    if (!weighted || weighted_metrics_[o].empty()) {
      mw = Tensor();
      continue;
    }
    if (!mw.defined() || mw.numel() != examples || mw.device() != device) mw = Tensor(Shape{examples}, DType::float32, device);
    backend::get(device).loss_scale(w.data(), examples, 1, 1.0, mw.data<float>());
  }
}

void TrainingLoop::apply_output_mask(LossInputs& in, std::size_t o, const Tensor& mask, Index values,
                                     Index examples) const {
  in.masked_weights.resize(in.weights.size());
  in.masked_metric_weights.resize(in.weights.size());
  in.masked_weighted_metric_weights.resize(in.weights.size());
  if (!mask.defined()) {
    in.masked_weights[o] = {};
    return;
  }
  if (mask.numel() != values)
    throw std::invalid_argument("Model '" + model_.name() + "': output '" + model_.outputs()[o].name() +
                                "' has a mask of shape " + mask.shape().to_string() + ", which does not fit its " +
                                std::to_string(values) + " loss values (" + std::to_string(examples) +
                                " examples of " + std::to_string(values / std::max<Index>(examples, 1)) + ")");
  const Device device = mask.device();
  const Index per = values / std::max<Index>(examples, 1);
  losses::detail::DeviceDoubles& w = in.masked_weights[o];
  if (!w.defined() || w.size() != values + 1 || w.device() != device) w = losses::detail::DeviceDoubles(values + 1, device);
  backend::Backend& be = backend::get(device);
  be.masked_loss_weights(in.weights[o].data(), per, mask.data<float>(), values, w.data());
  const auto metric_weights = [&](Tensor& out, const Tensor& example_weights) {
    if (!out.defined() || out.numel() != values || out.device() != device)
      out = Tensor(Shape{values}, DType::float32, device);
    be.masked_metric_weights(example_weights.defined() ? example_weights.data<float>() : nullptr, per,
                             mask.data<float>(), values, out.data<float>());
  };
  // Only for the metrics there are: this runs on every step.
  if (!metrics_[o].empty()) metric_weights(in.masked_metric_weights[o], Tensor());
  const Tensor& mw = in.metric_weights[o].defined() ? in.metric_weights[o] : in.sample_weight;
  if (!weighted_metrics_[o].empty()) metric_weights(in.masked_weighted_metric_weights[o], mw);
}

void TrainingLoop::stage_inputs(ReplicaSlot& slot, const data::Element& batch, Index n, bool copy) {
  Plan& plan = *slot.plan;
  StepBuffers& sb = *slot.buffers;
  const bool whole = slot.begin == 0 && slot.end == n;
  for (std::size_t i = 0; i < model_.inputs().size(); ++i) {
    const Tensor x = whole ? batch[i] : batch[i].slice(slot.begin, slot.end);
    if (!copy && x.dtype() == DType::float32 && x.device() == plan.options().device) {
      plan.set_input(static_cast<int>(i), x);
    } else {
      stage_float32(x, sb.staged_inputs[i], plan.options().device, sb.staged_host_inputs[i], sb.landing_inputs[i]);
      plan.set_input(static_cast<int>(i), sb.staged_inputs[i]);
    }
  }
}

void TrainingLoop::replica_step(ReplicaSlot& slot, const data::Element& batch, Index n, Mode mode) {
  Plan& plan = *slot.plan;
  stage_inputs(slot, batch, n, false);
  plan.forward();
  if (mode == Mode::predict) return;
  check_host_targets(slot, batch, n);
  stage_loss_inputs(slot.buffers->loss_inputs, batch, slot.begin, slot.end, plan.options().device,
                    mode == Mode::train);
  losses_and_backward(slot, n, mode);
}

void TrainingLoop::check_host_targets(const ReplicaSlot& slot, const data::Element& batch, Index n) const {
  const Plan& plan = *slot.plan;
  if (plan.options().device.is_cpu()) return;
  const std::size_t ni = model_.inputs().size();
  const bool whole = slot.begin == 0 && slot.end == n;
  for (std::size_t o = 0; o < model_.outputs().size(); ++o) {
    const Tensor& target = batch[ni + o];
    if (target.device().is_cpu())
      losses_[o]->check_host_targets(whole ? target : target.slice(slot.begin, slot.end),
                                     plan.output(static_cast<int>(o)).shape());
  }
}

void TrainingLoop::losses_and_backward(ReplicaSlot& slot, Index n, Mode mode) {
  const std::size_t no = model_.outputs().size();
  const bool training = mode == Mode::train;
  Plan& plan = *slot.plan;
  StepBuffers& sb = *slot.buffers;
  const Device device = plan.options().device;
  LossInputs& in = sb.loss_inputs;
  for (std::size_t o = 0; o < no; ++o) {
    const Tensor& y_true = in.targets[o];
    const Tensor& y_pred = plan.output(static_cast<int>(o));
    losses::Loss& loss = *losses_[o];
    loss.check_shapes(y_true.shape(), y_pred.shape());
    Tensor& per_example = sb.per_example[o];
    loss.forward(y_true, y_pred, per_example);
    const Index values = per_example.numel(), per = values / (slot.end - slot.begin);
    apply_output_mask(in, o, plan.output_mask(static_cast<int>(o)), values, slot.end - slot.begin);
    if (!training) continue;
    // sum_over_batch_size over the global batch: the replicas' parts of the gradient add up to the gradient of
    // the whole batch's loss. A masked output's weights are per value, each replica's mean over its kept values.
    const double k = loss_weights_[o] / static_cast<double>(n * per);
    const bool masked = in.masked_weights[o].defined();
    backend::get(device).loss_scale(masked ? in.masked_weights[o].data() : in.weights[o].data(), values,
                                    masked ? 1 : per, k, sb.scale[o].data<float>());
    const bool fuse = loss.can_fuse_softmax() && plan.output_is_fusable_softmax(static_cast<int>(o));
    plan.set_output_grad_is_logits(static_cast<int>(o), fuse);
    if (fuse)
      loss.backward_through_softmax(y_true, y_pred, sb.scale[o], plan.output_grad(static_cast<int>(o)));
    else
      loss.backward(y_true, y_pred, sb.scale[o], plan.output_grad(static_cast<int>(o)));
  }
  if (training) plan.backward();
}

void TrainingLoop::set_step_capturer(std::shared_ptr<StepCapturer> capturer) {
  injected_capturer_ = std::move(capturer);
  step_graphs_.clear();
}

StepCapturer* TrainingLoop::step_capturer(const Plan& plan) {
  if (injected_capturer_) return injected_capturer_.get();
  const Device device = plan.options().device;
  if (!device.is_cuda()) return nullptr;
  const char* setting = std::getenv("TOWER_CUDA_GRAPHS");
  if (setting && std::string(setting) == "0") return nullptr;
  if (!gpu_capturer_ || !(gpu_capturer_->device() == device)) gpu_capturer_ = std::make_unique<BackendCapturer>(device);
  return gpu_capturer_.get();
}

StepGraphs::Fingerprint TrainingLoop::step_fingerprint(const ReplicaSlot& slot) const {
  StepGraphs::Fingerprint f{static_cast<std::uintptr_t>(slot.plan->serial())};
  const auto add = [&f](const void* p) { f.push_back(reinterpret_cast<std::uintptr_t>(p)); };
  const auto add_tensor = [&add](const Tensor& t) { add(t.defined() ? t.raw_data() : nullptr); };
  for (const VariablePtr& v : model_.weights()) add_tensor(v->value);
  const StepBuffers& sb = *slot.buffers;
  for (const Tensor& t : sb.staged_inputs) add_tensor(t);
  for (const Tensor& t : sb.loss_inputs.targets) add_tensor(t);
  for (const losses::detail::DeviceDoubles& w : sb.loss_inputs.weights) add(w.data());
  for (const Tensor& t : sb.per_example) add_tensor(t);
  for (const Tensor& t : sb.scale) add_tensor(t);
  optimizer_->append_step_fingerprint(f);
  return f;
}

TrainingLoop::FitScope TrainingLoop::begin_fit(const std::vector<CallbackPtr>& cbs, const data::Dataset& train) {
  fit_callbacks_ = cbs;
  train_data_ = &train;
  model_.stop_training = false;
  model_.resume_epoch = -1;
  return FitScope{*this};
}

void TrainingLoop::add_penalties(const std::vector<VariablePtr>& variables, double examples) {
  for (const VariablePtr& v : variables) v->regularizer.add_penalty(v->value, examples, loss_sums(v->value.device()).data());
}

void TrainingLoop::run_update(const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients,
                              optimizers::Optimizer& optimizer) {
  for (std::size_t k = 0; k < variables.size(); ++k)
    if (variables[k]->regularizer.active()) {
      Tensor g = gradients[k];
      variables[k]->regularizer.add_gradient(variables[k]->value, g);
    }
  optimizer.run_step();
}

void TrainingLoop::graphed_train_step(ReplicaSlot& slot, const data::Element& batch, Index n, StepCapturer& capturer) {
  Plan& plan = *slot.plan;
  // Outside the graph: this step's inputs, targets and example weights into fixed buffers, and its step values
  // (Dropout's seeds) drawn and uploaded, exactly as an eager forward would draw them.
  stage_inputs(slot, batch, n, true);
  check_host_targets(slot, batch, n);
  stage_loss_inputs(slot.buffers->loss_inputs, batch, slot.begin, slot.end, plan.options().device, true, true);
  plan.refresh_step_values();
  // The penalties read the weights before the update, which is in the graph.
  const std::vector<VariablePtr>& variables = plan.trainable_weights();
  const std::vector<Tensor>& gradients = plan.weight_grads();
  add_penalties(variables, static_cast<double>(n));
  optimizer_->prepare_step(variables, gradients);
  const StepGraphs::Ran ran = step_graphs_.run(capturer, &plan, step_fingerprint(slot), [&] {
    plan.run_forward();
    losses_and_backward(slot, n, Mode::train);
    run_update(variables, gradients, *optimizer_);
  });
  if (ran != StepGraphs::Ran::eager) optimizer_->step_replayed();  // a graph's launch ran the update
  optimizer_->finish_step();
}

TrainingLoop::Gathered& TrainingLoop::distributed_step(Replicas& replicas, const data::Element& batch, Mode mode) {
  const Index n = batch[0].dim(0);
  const bool training = mode == Mode::train;
  const int local = replicas.num_local();
  const auto locals = static_cast<std::size_t>(local);
  if (replica_buffers_.size() != locals) replica_buffers_.resize(locals);
  slots_.resize(locals);
  parts_.resize(locals);
  for (int r = 0; r < local; ++r) {
    ReplicaSlot& slot = slots_[static_cast<std::size_t>(r)];
    std::tie(slot.begin, slot.end) = replicas.slice(n, r);
    slot.plan = slot.end > slot.begin ? &replicas.plan(r, slot.end - slot.begin, training) : nullptr;
    slot.buffers =
        slot.plan ? &step_buffers(replica_buffers_[static_cast<std::size_t>(r)], *slot.plan, mode) : nullptr;
  }
  auto work = [&](int r) { replica_step(slots_[static_cast<std::size_t>(r)], batch, n, mode); };
  replicas.run(n, ReplicaWork(work), training);

  Gathered& g = gathered_[n];
  const std::size_t no = model_.outputs().size();
  bool fits = g.y_pred.size() == no;  // as in step_buffers: the outputs may have changed
  for (std::size_t o = 0; fits && o < no; ++o) fits = g.y_pred[o].shape() == model_.outputs()[o].shape().with_batch(n);
  if (!fits) g = Gathered();
  if (g.y_pred.empty())
    for (std::size_t o = 0; o < no; ++o) g.y_pred.emplace_back(model_.outputs()[o].shape().with_batch(n));
  if (mode != Mode::predict && g.per_example.size() != losses_.size())
    for (std::size_t o = 0; o < no; ++o) g.per_example.emplace_back(losses_[o]->per_example_shape(g.y_pred[o].shape()));
  for (std::size_t o = 0; o < no; ++o) {
    if (mode != Mode::predict) {
      for (std::size_t r = 0; r < locals; ++r)
        parts_[r] = slots_[r].buffers ? slots_[r].buffers->per_example[o] : Tensor();
      replicas.gather(n, parts_, g.per_example[o]);
      if (metrics_[o].empty() && weighted_metrics_[o].empty()) continue;
    }
    for (std::size_t r = 0; r < locals; ++r)
      parts_[r] = slots_[r].plan ? slots_[r].plan->output(static_cast<int>(o)) : Tensor();
    replicas.gather(n, parts_, g.y_pred[o]);
  }
  // The outputs' masks, for the whole batch's loss weights.
  g.masks.resize(no);
  if (mode != Mode::predict)
    for (std::size_t o = 0; o < no; ++o) {
      const SymbolicTensor m = model_.outputs()[o].mask();
      if (!m.defined()) continue;
      const Shape shape = m.shape().with_batch(n);
      if (!g.masks[o].defined() || g.masks[o].shape() != shape) g.masks[o] = Tensor(shape, DType::float32, g.per_example[o].device());
      for (std::size_t r = 0; r < locals; ++r)
        parts_[r] = slots_[r].plan ? slots_[r].plan->output_mask(static_cast<int>(o)) : Tensor();
      replicas.gather(n, parts_, g.masks[o]);
    }
  return g;
}

void TrainingLoop::step(const data::Element& batch, Mode mode, Predictions* predictions) {
  check_batch(batch, mode);
  const std::size_t no = model_.outputs().size();
  if (mode == Mode::predict && !model_.distribution()) {
    std::vector<Tensor> outputs =
        model_.infer(std::vector<Tensor>(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(model_.inputs().size())),
                     true, "predict()");
    predictions->resize(no);
    for (std::size_t o = 0; o < no; ++o) (*predictions)[o].push_back(std::move(outputs[o]));
    return;
  }
  const Index n = batch[0].dim(0);
  const bool training = mode == Mode::train;
  if (training && std::find(trained_batch_sizes_.begin(), trained_batch_sizes_.end(), n) == trained_batch_sizes_.end())
    trained_batch_sizes_.push_back(n);

  // Per output: every example's loss values and the predictions, from the model's own plan or gathered from
  // the strategy's replicas.
  Replicas* replicas = model_.replicas();
  Plan* plan = nullptr;
  const std::vector<Tensor>* per_example = nullptr;
  const LossInputs* in = nullptr;
  std::function<const Tensor&(std::size_t)> y_pred;
  bool graphed = false;  // penalties and update done in the (captured) step
  std::unique_lock<std::mutex> turn;  // the model's GPU, while this step issues work to it (device_turn.h)
  if (replicas) {
    if (model_.has_unknown_input_sizes())
      throw std::invalid_argument("Model '" + model_.name() +
                                  "': inputs of unknown sizes (Input({-1})) under a distribution strategy are not "
                                  "supported; give the inputs fixed sizes (pad the batches to one length)");
    Gathered& g = distributed_step(*replicas, batch, mode);
    if (mode != Mode::predict) {
      stage_loss_inputs(g.loss_inputs, batch, 0, n, g.per_example[0].device(), training);
      for (std::size_t o = 0; o < no; ++o)
        apply_output_mask(g.loss_inputs, o, o < g.masks.size() ? g.masks[o] : Tensor(), g.per_example[o].numel(), n);
    }
    per_example = &g.per_example;
    in = &g.loss_inputs;
    y_pred = [&g](std::size_t o) -> const Tensor& { return g.y_pred[o]; };
  } else {
    // Inputs of unknown sizes (sequences of any length) get a plan per batch shape, run op by op: a captured step
    // belongs to one plan.
    const bool per_shape = model_.has_unknown_input_sizes();
    std::vector<Shape> shapes;
    if (per_shape)
      for (std::size_t i = 0; i < model_.inputs().size(); ++i) shapes.push_back(batch[i].shape());
    plan = per_shape ? &model_.plan_for(shapes, training) : &model_.plan_for(n, training);
    if (!plan->options().device.is_cpu()) turn = std::unique_lock(device_turn(plan->options().device));
    StepBuffers& single = step_buffers(buffers_, *plan, mode);
    ReplicaSlot slot{0, n, plan, &single};
    StepCapturer* capturer =
        training && !per_shape && !plan->trainable_weights().empty() ? step_capturer(*plan) : nullptr;
    graphed = capturer != nullptr;
    if (graphed) graphed_train_step(slot, batch, n, *capturer);
    else replica_step(slot, batch, n, mode);
    per_example = &single.per_example;
    in = &single.loss_inputs;
    y_pred = [plan](std::size_t o) -> const Tensor& { return plan->output(static_cast<int>(o)); };
  }
  if (mode == Mode::predict) {
    predictions->resize(no);
    for (std::size_t o = 0; o < no; ++o) (*predictions)[o].push_back(y_pred(o).clone());
    return;
  }

  // The logs hold sums over examples: each output's sum_over_batch_size loss (the weighted sum of its values over
  // their count) times the batch size, and their loss-weighted total with the regularizers' penalties.
  const double examples = static_cast<double>(n);
  const std::vector<VariablePtr>& trainable = training && plan ? plan->trainable_weights() : model_.trainable_weights();
  if (!graphed) add_penalties(trainable, examples);
  for (std::size_t o = 0; o < no; ++o) {
    const Tensor& pe = (*per_example)[o];
    const bool masked = o < in->masked_weights.size() && in->masked_weights[o].defined();
    const Index values = pe.numel(), per = masked ? 1 : values / n;
    const double* w = masked ? in->masked_weights[o].data() : in->weights[o].data();
    double* sums = loss_sums(pe.device()).data();
    backend::Backend& be = backend::get(pe.device());
    be.accumulate_weighted_sum(pe.data<float>(), w, values, per, examples / static_cast<double>(values), sums + 1 + o);
    be.accumulate_weighted_sum(pe.data<float>(), w, values, per,
                               loss_weights_[o] * examples / static_cast<double>(values), sums);
    const Tensor& plain = masked ? in->masked_metric_weights[o] : Tensor();
    for (const auto& m : metrics_[o]) m->update_state(in->targets[o], y_pred(o), plain);
    const Tensor& mw = masked ? in->masked_weighted_metric_weights[o]
                              : in->metric_weights[o].defined() ? in->metric_weights[o] : in->sample_weight;
    for (const auto& m : weighted_metrics_[o]) m->update_state(in->targets[o], y_pred(o), mw);
  }

  if (training && trainable.empty()) {
    // Keras warns and trains on: the forward in training mode still moves BatchNormalization's statistics.
    if (!warned_no_trainable_)
      std::cerr << "Warning: model '" << model_.name() << "' does not have any trainable weights.\n";
    warned_no_trainable_ = true;
    if (replicas) replicas->after_update();
  } else if (training && !graphed) {
    const std::vector<Tensor>& grads = replicas ? replicas->gradients() : plan->weight_grads();
    auto update = [](const std::vector<VariablePtr>& variables, const std::vector<Tensor>& gradients,
                     optimizers::Optimizer& optimizer) {
      optimizer.prepare_step(variables, gradients);
      run_update(variables, gradients, optimizer);
      optimizer.finish_step();
    };
    // Replicas with their own copies of the variables first: they read the summed gradients before the model's
    // regularizers add to them.
    if (replicas) replicas->update_copies(*optimizer_, CopyUpdate(update));
    update(trainable, grads, *optimizer_);
    if (replicas) replicas->after_update();
  }
  loss_count_ += examples;
}

TrainingLoop::EpochBatches::EpochBatches(const data::Dataset& data, std::optional<std::int64_t> steps, std::string who)
    : data_(data), steps_(steps), cardinality_(data.cardinality()), who_(std::move(who)) {}

bool TrainingLoop::EpochBatches::begin_epoch() {
  step_ = 0;
  if (it_ && steps_ && (cardinality_ < 0 || seen_ < cardinality_)) return false;
  it_ = data_.make_iterator();
  seen_ = 0;
  return true;
}

std::optional<data::Element> TrainingLoop::EpochBatches::next() {
  if (!it_ || (steps_ && step_ >= *steps_)) return std::nullopt;
  if (cardinality_ >= 0 && seen_ >= cardinality_) {
    ran_out();
    return std::nullopt;
  }
  std::optional<data::Element> batch = it_->next();
  if (!batch) {
    ran_out();
    it_.reset();
    return std::nullopt;
  }
  ++seen_;
  ++step_;
  return batch;
}

void TrainingLoop::EpochBatches::ran_out() {
  // A pass that ends without steps is simply the epoch's end.
  if (!steps_ || warned_) return;
  warned_ = true;
  std::cerr << "Warning: " << who_ << ": the input ran out of data; interrupting the epoch. Make sure that the "
            << "dataset can generate the batches asked for (at least steps_per_epoch * epochs in fit(); "
            << "Dataset::repeat() makes it endless).\n";
}

std::int64_t TrainingLoop::run_epoch(Mode mode, EpochBatches& batches, const std::vector<CallbackPtr>& cbs,
                                     Predictions* predictions) {
  std::int64_t s = 0;
  while (std::optional<data::Element> batch = batches.next()) {
    each(cbs, [&](callbacks::Callback& cb) {
      if (mode == Mode::train) cb.on_train_batch_begin(s, Logs());
      else if (mode == Mode::test) cb.on_test_batch_begin(s, Logs());
      else cb.on_predict_batch_begin(s, Logs());
    });
    if (mode == Mode::train) model_.train_step(*batch);
    else if (mode == Mode::test) model_.test_step(*batch);
    else step(*batch, mode, predictions);
    // The running values are read from the device only if a callback looks at them (Logs::defer).
    Logs l;
    if (mode != Mode::predict) {
      l.defer([this] { return logs(); });
      l.set("size", static_cast<double>((*batch)[0].dim(0)));
    }
    each(cbs, [&](callbacks::Callback& cb) {
      if (mode == Mode::train) cb.on_train_batch_end(s, l);
      else if (mode == Mode::test) cb.on_test_batch_end(s, l);
      else cb.on_predict_batch_end(s, l);
    });
    ++s;
    if (mode == Mode::train && model_.stop_training) break;
  }
  return s;
}

std::int64_t TrainingLoop::steps_of(const data::Dataset& data, std::optional<std::int64_t> steps) {
  const std::int64_t card = data.cardinality();
  return steps ? *steps : card >= 0 ? card : -1;
}

void TrainingLoop::start_callbacks(std::vector<CallbackPtr>& cbs, int verbose, int epochs, std::int64_t steps,
                                   CallbackPtr last) {
  // Only the chief of a multi-worker strategy shows progress.
  if (verbose > 0 && model_.is_chief()) cbs.push_back(std::make_shared<callbacks::ProgbarLogger>());
  if (last) cbs.push_back(std::move(last));
  callbacks::Params params;
  params.epochs = epochs;
  params.verbose = verbose;
  params.steps = steps;
  each(cbs, [&](callbacks::Callback& cb) {
    cb.set_model(&model_);
    cb.set_params(params);
  });
}

void TrainingLoop::sync_replicas() {
  if (!model_.distribution()) return;
  if (Replicas* replicas = model_.replicas()) replicas->sync_from_model();
}

Logs TrainingLoop::train_on_batch(const data::Element& batch) {
  const ModelUse::Guard use = model_.use().training();
  require_compiled("train_on_batch()");
  model_.build_from(batch);
  reset_metrics();
  model_.train_step(batch);
  return logs();
}

Logs TrainingLoop::test_on_batch(const data::Element& batch) {
  const ModelUse::Guard use = model_.use().evaluation(model_.name(), "test_on_batch()");
  require_compiled("test_on_batch()");
  model_.build_from(batch);
  reset_metrics();
  model_.test_step(batch);
  return logs();
}

void TrainingLoop::default_train_step(const data::Element& batch) {
  require_compiled("train_step()");
  step(batch, Mode::train);
}

void TrainingLoop::default_test_step(const data::Element& batch) {
  require_compiled("test_step()");
  step(batch, Mode::test);
}

void TrainingLoop::track_loss(const Tensor& loss, Index examples) {
  require_compiled("track_loss()");
  if (!loss.defined() || loss.numel() != 1 || loss.dtype() != DType::float32)
    throw std::invalid_argument("Model '" + model_.name() + "': track_loss() takes one float32 value, got " +
                                (loss.defined() ? loss.shape().to_string() : std::string("an undefined tensor")));
  double* sums = loss_sums(loss.device()).data();
  backend::get(loss.device()).accumulate_weighted_sum(loss.data<float>(), nullptr, 1, 1, static_cast<double>(examples), sums);
  loss_count_ += static_cast<double>(examples);
}

void TrainingLoop::track_metric(const std::string& name, const Tensor& value) {
  require_compiled("track_metric()");
  const std::string who = "Model '" + model_.name() + "': track_metric(\"" + name + "\"): ";
  if (!value.defined() || value.numel() != 1 || value.dtype() != DType::float32)
    throw std::invalid_argument(who + "takes one float32 value, got " +
                                (value.defined() ? dtype_name(value.dtype()) + " " + value.shape().to_string()
                                                 : std::string("an undefined tensor")));
  for (auto& [key, tracker] : tracked_)
    if (key == name) return tracker->update_state(value.reshape(Shape{1}));
  if (name.empty()) throw std::invalid_argument(who + "an empty name");
  if (name == "loss") throw std::invalid_argument(who + "\"loss\" is track_loss()'s");
  for (const auto& [key, metric] : named_metrics())
    if (key == name) throw std::invalid_argument(who + "a compiled metric is logged as \"" + name + "\"");
  auto tracker = std::make_shared<metrics::MeanImpl>(metrics::MeanOptions{.name = name});
  tracker->update_state(value.reshape(Shape{1}));
  tracked_.emplace_back(name, std::move(tracker));
}

void TrainingLoop::update_metrics(const std::vector<Tensor>& y_true, const std::vector<Tensor>& y_pred,
                                  const Tensor& sample_weight) {
  require_compiled("update_metrics()");
  if (y_true.size() != metrics_.size() || y_pred.size() != metrics_.size())
    throw std::invalid_argument("Model '" + model_.name() + "': update_metrics() got " + std::to_string(y_true.size()) +
                                " targets and " + std::to_string(y_pred.size()) + " predictions for " +
                                std::to_string(metrics_.size()) + " outputs");
  for (std::size_t o = 0; o < metrics_.size(); ++o) {
    const Device device = y_pred[o].device();
    const Tensor t = y_true[o].device() == device ? y_true[o] : y_true[o].to(device);
    const Tensor w = !sample_weight.defined() || sample_weight.device() == device ? sample_weight : sample_weight.to(device);
    for (const auto& m : metrics_[o]) m->update_state(t, y_pred[o]);
    for (const auto& m : weighted_metrics_[o]) m->update_state(t, y_pred[o], w);
  }
}

Logs TrainingLoop::evaluate(const data::Dataset& data, const EvaluateOptions& options,
                            const std::vector<CallbackPtr>* fit_callbacks) {
  const ModelUse::Guard use = model_.use().evaluation(model_.name(), "evaluate()");
  require_compiled("evaluate()");
  model_.build_from(data);
  std::vector<CallbackPtr> cbs = fit_callbacks ? *fit_callbacks : options.callbacks;
  if (!fit_callbacks) {
    start_callbacks(cbs, options.verbose, 1, steps_of(data, options.steps));
    sync_replicas();
  }
  reset_metrics();
  each(cbs, [&](callbacks::Callback& cb) { cb.on_test_begin(Logs()); });
  EpochBatches batches(data, options.steps, "Model '" + model_.name() + "': evaluate()");
  batches.begin_epoch();
  if (run_epoch(Mode::test, batches, cbs) == 0)
    throw std::invalid_argument("Model '" + model_.name() + "': evaluate() got no batches");
  Logs result = logs();
  each(cbs, [&](callbacks::Callback& cb) { cb.on_test_end(result); });
  return result;
}

std::vector<Tensor> TrainingLoop::predict(const data::Dataset& data, const PredictOptions& options) {
  // On the model's inference plans, beside other threads' calls; on a strategy's replicas, one call at a time.
  const std::string who = "Model '" + model_.name() + "'";
  const ModelUse::Guard use = model_.distribution() ? model_.use().evaluation(model_.name(), "predict()")
                                                    : model_.use().inference(model_.name(), "predict()");
  std::vector<CallbackPtr> cbs = options.callbacks;
  start_callbacks(cbs, options.verbose, 1, steps_of(data, options.steps));
  each(cbs, [&](callbacks::Callback& cb) { cb.on_predict_begin(Logs()); });
  sync_replicas();
  Predictions predictions(model_.outputs().size());
  EpochBatches batches(data, options.steps, who + ": predict()");
  batches.begin_epoch();
  run_epoch(Mode::predict, batches, cbs, &predictions);
  std::vector<Tensor> result;
  for (std::size_t o = 0; o < predictions.size(); ++o) {
    Index total = 0;
    for (const Tensor& p : predictions[o]) total += p.dim(0);
    Tensor out(model_.outputs()[o].shape().with_batch(total));
    Index row = 0;
    for (const Tensor& p : predictions[o]) {
      out.slice(row, row + p.dim(0)).copy_from(p);
      row += p.dim(0);
    }
    result.push_back(out);
  }
  each(cbs, [&](callbacks::Callback& cb) { cb.on_predict_end(Logs()); });
  return result;
}

callbacks::History TrainingLoop::fit(const data::Dataset& train, const FitOptions& options) try {
  const ModelUse::Guard use = model_.use().training();
  require_compiled("fit()");
  model_.build_from(train);
  if (options.epochs < 0 || options.initial_epoch < 0)
    throw std::invalid_argument("Model '" + model_.name() + "': fit(): epochs " + std::to_string(options.epochs) +
                                " and initial_epoch " + std::to_string(options.initial_epoch) + " must not be negative");
  if (options.validation_split != 0 && !options.validation_data)
    throw std::invalid_argument("Model '" + model_.name() + "': fit(): validation_split is only supported for tensors "
                                "(fit(x, y)); for a Dataset, pass validation_data");
  if (options.steps_per_epoch && *options.steps_per_epoch <= 0)
    throw std::invalid_argument("Model '" + model_.name() + "': fit(): steps_per_epoch must be positive, got " +
                                std::to_string(*options.steps_per_epoch));
  // The class weights of this fit's training batches, dropped when it ends.
  struct ClassWeights {
    TrainingLoop& loop;
    ~ClassWeights() {
      loop.class_weight_.clear();
      ++loop.class_weight_version_;
    }
  } const class_weights{*this};
  class_weight_ = options.class_weight;
  ++class_weight_version_;
  if (Replicas* replicas = model_.distribution() ? model_.replicas() : nullptr)
    if (RemoteTraining* remote = replicas->remote()) return remote_fit(*remote, train, options);
  auto history = std::make_shared<callbacks::History>();
  std::vector<CallbackPtr> cbs = options.callbacks;
  start_callbacks(cbs, options.verbose, options.epochs, steps_of(train, options.steps_per_epoch), history);
  const FitScope scope = begin_fit(cbs, train);
  each(cbs, [&](callbacks::Callback& cb) { cb.before_train_begin(Logs()); });
  each(cbs, [&](callbacks::Callback& cb) { cb.on_train_begin(Logs()); });
  // After on_train_begin, which may restore weights (BackupAndRestore).
  sync_replicas();
  const int first_epoch = model_.resume_epoch >= 0 ? model_.resume_epoch : options.initial_epoch;
  model_.resume_epoch = -1;
  EpochBatches batches(train, options.steps_per_epoch, "Model '" + model_.name() + "': fit()");
  Logs last_logs;  // on_train_end's: the last epoch's (Keras)
  for (int epoch = first_epoch; epoch < options.epochs && !model_.stop_training; ++epoch) {
    reset_metrics();
    each(cbs, [&](callbacks::Callback& cb) { cb.on_epoch_begin(epoch, Logs()); });
    // An epoch that finds a carried-over pass already at its end has no batches, as in Keras; a new pass must
    // have some.
    const bool new_pass = batches.begin_epoch();
    if (run_epoch(Mode::train, batches, cbs) == 0 && new_pass)
      throw std::invalid_argument("Model '" + model_.name() + "': fit() got no training batches");
    Logs epoch_logs = logs();
    if (options.validation_data && (epoch + 1) % std::max(1, options.validation_freq) == 0) {
      EvaluateOptions eo;
      eo.steps = options.validation_steps;
      eo.verbose = 0;
      Logs val = evaluate(*options.validation_data, eo, &cbs);
      for (const auto& [k, v] : val.entries()) epoch_logs.set("val_" + k, v);
    }
    each(cbs, [&](callbacks::Callback& cb) {
      cb.add_epoch_logs(epoch, epoch_logs);
      cb.on_epoch_end(epoch, epoch_logs);
    });
    each(cbs, [&](callbacks::Callback& cb) { cb.on_epoch_complete(epoch, epoch_logs); });
    last_logs = epoch_logs;
  }
  // Keras: with use_ema the trained variables take their moving averages before on_train_end.
  if (options.epochs > 0) optimizer_->finalize_variable_values(model_.trainable_weights());
  each(cbs, [&](callbacks::Callback& cb) { cb.on_train_end(last_logs); });
  return *history;
} catch (const std::exception& e) {
  if (auto* handler = dynamic_cast<FitFailureHandler*>(model_.distribution().get())) handler->fit_failed(e.what());
  throw;
}

}  // namespace tower::detail
