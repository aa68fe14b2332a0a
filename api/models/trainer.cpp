#include "api/models/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include "api/callbacks/progbar_logger.h"
#include "api/models/model.h"

namespace tower::detail {

using callbacks::CallbackPtr;
using callbacks::Logs;

namespace {

// Runs every callback's hook.
template <class Fn>
void each(const std::vector<CallbackPtr>& cbs, Fn fn) {
  for (const CallbackPtr& cb : cbs) fn(*cb);
}

// The class index of example i of y_true: a sparse label, or the argmax of a one-hot row.
int class_of(const Tensor& y, Index i) {
  const Index per = y.numel() / y.dim(0);
  if (y.dtype() == DType::int32) return y.data<std::int32_t>()[i * per];
  if (y.dtype() == DType::int64) return static_cast<int>(y.data<std::int64_t>()[i * per]);
  if (y.dtype() == DType::uint8) return y.data<std::uint8_t>()[i * per];
  const float* p = y.data<float>() + i * per;
  if (per == 1) return static_cast<int>(std::lround(p[0]));
  return static_cast<int>(std::max_element(p, p + per) - p);
}

void stage_float32(const Tensor& src, Tensor& dst) {
  if (!dst.defined() || dst.shape() != src.shape()) dst = Tensor(src.shape());
  float* d = dst.data<float>();
  const Index n = src.numel();
  switch (src.dtype()) {
    case DType::uint8: {
      const auto* s = src.data<std::uint8_t>();
      for (Index i = 0; i < n; ++i) d[i] = s[i];
      break;
    }
    case DType::int32: {
      const auto* s = src.data<std::int32_t>();
      for (Index i = 0; i < n; ++i) d[i] = static_cast<float>(s[i]);
      break;
    }
    case DType::int64: {
      const auto* s = src.data<std::int64_t>();
      for (Index i = 0; i < n; ++i) d[i] = static_cast<float>(s[i]);
      break;
    }
    case DType::float32: dst.copy_from(src); break;
  }
}

}  // namespace

Trainer::Trainer(ModelImpl& model, optimizers::OptimizerPtr optimizer, std::vector<losses::LossPtr> losses,
                 std::vector<std::vector<metrics::MetricPtr>> metrics, std::vector<double> loss_weights)
    : model_(model), optimizer_(std::move(optimizer)), losses_(std::move(losses)), metrics_(std::move(metrics)),
      loss_weights_(std::move(loss_weights)) {
  const std::size_t outputs = model_.outputs().size();
  const std::string who = "Model '" + model_.name() + "': compile(): ";
  if (!optimizer_) throw std::invalid_argument(who + "no optimizer");
  if (losses_.size() == 1 && outputs > 1) losses_.assign(outputs, losses_[0]);
  if (losses_.size() != outputs)
    throw std::invalid_argument(who + std::to_string(losses_.size()) + " losses for " + std::to_string(outputs) +
                                " outputs");
  for (const auto& l : losses_)
    if (!l) throw std::invalid_argument(who + "a loss is null");
  if (metrics_.empty()) metrics_.resize(outputs);
  if (metrics_.size() == 1 && outputs > 1) {
    // The same metrics on every output, each output with its own instances.
    for (std::size_t o = 1; o < outputs; ++o) {
      std::vector<metrics::MetricPtr> copy;
      for (const auto& m : metrics_[0]) copy.push_back(m->clone());
      metrics_.push_back(copy);
    }
  }
  if (metrics_.size() != outputs)
    throw std::invalid_argument(who + "metrics for " + std::to_string(metrics_.size()) + " outputs, the model has " +
                                std::to_string(outputs));
  if (loss_weights_.empty()) loss_weights_.assign(outputs, 1.0);
  if (loss_weights_.size() != outputs)
    throw std::invalid_argument(who + std::to_string(loss_weights_.size()) + " loss weights for " +
                                std::to_string(outputs) + " outputs");
  for (const SymbolicTensor& t : model_.outputs()) output_names_.push_back(t.layer().name());
  output_loss_sum_.assign(outputs, 0.0);
}

void Trainer::reset_metrics() {
  loss_sum_ = loss_count_ = 0;
  std::fill(output_loss_sum_.begin(), output_loss_sum_.end(), 0.0);
  for (auto& ms : metrics_)
    for (auto& m : ms) m->reset_state();
}

Logs Trainer::logs() const {
  Logs logs;
  logs.set("loss", loss_count_ > 0 ? loss_sum_ / loss_count_ : 0.0);
  const bool several = metrics_.size() > 1;
  if (several)
    for (std::size_t o = 0; o < output_loss_sum_.size(); ++o)
      logs.set(output_names_[o] + "_loss", loss_count_ > 0 ? output_loss_sum_[o] / loss_count_ : 0.0);
  for (std::size_t o = 0; o < metrics_.size(); ++o)
    for (const auto& m : metrics_[o]) logs.set(several ? output_names_[o] + "_" + m->name() : m->name(), m->result());
  return logs;
}

void Trainer::check_batch(const data::Element& batch) const {
  const std::size_t ni = model_.inputs().size(), no = model_.outputs().size();
  if (batch.size() != ni + no && batch.size() != ni + no + 1)
    throw std::invalid_argument("Model '" + model_.name() + "': a batch has " + std::to_string(batch.size()) +
                                " components; expected " + std::to_string(ni) + " input(s), " + std::to_string(no) +
                                " target(s) and optionally sample weights");
  const Index n = batch[0].rank() > 0 ? batch[0].dim(0) : -1;
  for (std::size_t i = 0; i < batch.size(); ++i)
    if (batch[i].rank() == 0 || batch[i].dim(0) != n)
      throw std::invalid_argument("Model '" + model_.name() + "': batch component " + std::to_string(i) +
                                  " has shape " + batch[i].shape().to_string() + ", expected " + std::to_string(n) +
                                  " examples like component 0");
}

Trainer::LossBuffers& Trainer::loss_buffers(BufferCache& cache, Plan& plan) {
  auto& slot = cache[plan.batch_size()];
  if (!slot) {
    slot = std::make_unique<LossBuffers>();
    for (std::size_t o = 0; o < losses_.size(); ++o) {
      const Shape pe = losses_[o]->per_example_shape(plan.output(static_cast<int>(o)).shape());
      slot->per_example.emplace_back(pe);
      slot->scale.emplace_back(pe);
      slot->weights.emplace_back(static_cast<std::size_t>(plan.batch_size()), 1.0);
    }
    slot->staged_inputs.resize(model_.inputs().size());
  }
  return *slot;
}

void Trainer::example_weights(const data::Element& batch, std::size_t o, Index begin, Index end,
                              std::vector<double>& w) const {
  const std::size_t ni = model_.inputs().size(), no = model_.outputs().size();
  const Tensor& y_true = batch[ni + o];
  const float* sw = batch.size() > ni + no ? batch[ni + no].data<float>() : nullptr;
  w.resize(static_cast<std::size_t>(end - begin));
  for (Index i = begin; i < end; ++i) {
    double wi = sw ? static_cast<double>(sw[i]) : 1.0;
    if (!class_weight_.empty()) {
      auto it = class_weight_.find(class_of(y_true, i));
      wi *= it == class_weight_.end() ? 1.0 : it->second;
    }
    w[static_cast<std::size_t>(i - begin)] = wi;
  }
}

void Trainer::replica_step(ReplicaSlot& slot, const data::Element& batch, Index n, bool training) {
  const std::size_t ni = model_.inputs().size(), no = model_.outputs().size();
  Plan& plan = *slot.plan;
  LossBuffers& lb = *slot.buffers;
  const bool whole = slot.begin == 0 && slot.end == n;
  const auto rows = [&](const Tensor& t) { return whole ? t : t.slice(slot.begin, slot.end); };
  for (std::size_t i = 0; i < ni; ++i) {
    const Tensor x = rows(batch[i]);
    if (x.dtype() == DType::float32 && x.device() == plan.options().device) {
      plan.set_input(static_cast<int>(i), x);
    } else {
      stage_float32(x, lb.staged_inputs[i]);
      plan.set_input(static_cast<int>(i), lb.staged_inputs[i]);
    }
  }
  plan.forward();
  for (std::size_t o = 0; o < no; ++o) {
    const Tensor y_true = rows(batch[ni + o]);
    const Tensor& y_pred = plan.output(static_cast<int>(o));
    losses::Loss& loss = *losses_[o];
    loss.check_shapes(y_true.shape(), y_pred.shape());
    Tensor& per_example = lb.per_example[o];
    loss.forward(y_true, y_pred, per_example);
    if (!training) continue;
    std::vector<double>& w = lb.weights[o];
    example_weights(batch, o, slot.begin, slot.end, w);
    // sum_over_batch_size over the global batch: the replicas' parts of the gradient add up to the gradient of
    // the whole batch's loss.
    const Index values = per_example.numel(), per = values / (slot.end - slot.begin);
    const double k = loss_weights_[o] / static_cast<double>(n * per);
    float* scale = lb.scale[o].data<float>();
    for (Index i = 0; i < values; ++i) scale[i] = static_cast<float>(k * w[static_cast<std::size_t>(i / per)]);
    const bool fuse = loss.can_fuse_softmax() && plan.output_is_fusable_softmax(static_cast<int>(o));
    plan.set_output_grad_is_logits(static_cast<int>(o), fuse);
    if (fuse)
      loss.backward_through_softmax(y_true, y_pred, lb.scale[o], plan.output_grad(static_cast<int>(o)));
    else
      loss.backward(y_true, y_pred, lb.scale[o], plan.output_grad(static_cast<int>(o)));
  }
  if (training) plan.backward();
}

Trainer::Gathered& Trainer::distributed_step(detail::Replicas& replicas, const data::Element& batch,
                                             bool training) {
  const Index n = batch[0].dim(0);
  const int local = replicas.num_local();
  const auto locals = static_cast<std::size_t>(local);
  if (replica_buffers_.size() != locals) replica_buffers_.resize(locals);
  slots_.resize(locals);
  parts_.resize(locals);
  for (int r = 0; r < local; ++r) {
    ReplicaSlot& slot = slots_[static_cast<std::size_t>(r)];
    std::tie(slot.begin, slot.end) = replicas.slice(n, r);
    slot.plan = slot.end > slot.begin ? &replicas.plan(r, slot.end - slot.begin, training) : nullptr;
    slot.buffers = slot.plan ? &loss_buffers(replica_buffers_[static_cast<std::size_t>(r)], *slot.plan) : nullptr;
  }
  auto work = [&](int r) { replica_step(slots_[static_cast<std::size_t>(r)], batch, n, training); };
  replicas.run(n, detail::ReplicaWork(work), training);

  Gathered& g = gathered_[n];
  const std::size_t no = losses_.size();
  if (g.per_example.empty())
    for (std::size_t o = 0; o < no; ++o) {
      const Shape y_pred = model_.outputs()[o].shape().with_batch(n);
      g.per_example.emplace_back(losses_[o]->per_example_shape(y_pred));
      g.y_pred.emplace_back(y_pred);
    }
  for (std::size_t o = 0; o < no; ++o) {
    for (std::size_t r = 0; r < locals; ++r) parts_[r] = slots_[r].buffers ? slots_[r].buffers->per_example[o] : Tensor();
    replicas.gather(n, parts_, g.per_example[o]);
    if (metrics_[o].empty()) continue;
    for (std::size_t r = 0; r < locals; ++r)
      parts_[r] = slots_[r].plan ? slots_[r].plan->output(static_cast<int>(o)) : Tensor();
    replicas.gather(n, parts_, g.y_pred[o]);
  }
  return g;
}

double Trainer::step(const data::Element& batch, bool training) {
  check_batch(batch);
  const std::size_t ni = model_.inputs().size(), no = model_.outputs().size();
  const Index n = batch[0].dim(0);
  const Tensor sample_weight = batch.size() > ni + no ? batch[ni + no] : Tensor();
  if (sample_weight.defined() && (sample_weight.numel() != n || sample_weight.dtype() != DType::float32))
    throw std::invalid_argument("Model '" + model_.name() + "': sample weights of shape " +
                                sample_weight.shape().to_string() + " for a batch of " + std::to_string(n));

  // Per output: every example's loss values and the predictions, from the model's own plan or gathered from
  // the strategy's replicas.
  detail::Replicas* replicas = model_.replicas();
  Plan* plan = nullptr;
  LossBuffers* single = nullptr;
  Gathered* gathered = nullptr;
  if (replicas) {
    gathered = &distributed_step(*replicas, batch, training);
  } else {
    plan = &model_.plan_for(n, training);
    single = &loss_buffers(buffers_, *plan);
    ReplicaSlot slot{0, n, plan, single};
    replica_step(slot, batch, n, training);
  }

  double total = 0;
  for (std::size_t o = 0; o < no; ++o) {
    const Tensor& y_true = batch[ni + o];
    const Tensor& per_example = gathered ? gathered->per_example[o] : single->per_example[o];
    example_weights(batch, o, 0, n, weights_);
    const Index values = per_example.numel(), per = values / n;
    const float* pe = per_example.data<float>();
    double sum = 0;
    for (Index i = 0; i < values; ++i) sum += weights_[static_cast<std::size_t>(i / per)] * pe[i];
    // sum_over_batch_size: divide by the number of per-example values.
    const double value = sum / static_cast<double>(values);
    output_loss_sum_[o] += value * static_cast<double>(n);
    total += loss_weights_[o] * value;
    if (metrics_[o].empty()) continue;
    const Tensor& y_pred = gathered ? gathered->y_pred[o] : plan->output(static_cast<int>(o));
    for (const auto& m : metrics_[o]) m->update_state(y_true, y_pred, sample_weight);
  }

  const std::vector<VariablePtr>& trainable =
      training && plan ? plan->trainable_weights() : model_.trainable_weights();
  for (const VariablePtr& v : trainable) total += v->regularizer.penalty(v->value);
  if (training) {
    const std::vector<Tensor>& grads = replicas ? replicas->gradients() : plan->weight_grads();
    for (std::size_t k = 0; k < trainable.size(); ++k)
      if (trainable[k]->regularizer.active()) {
        Tensor g = grads[k];
        trainable[k]->regularizer.add_gradient(trainable[k]->value, g);
      }
    optimizer_->apply_gradients(trainable, grads);
    if (replicas) replicas->after_update();
  }
  loss_sum_ += total * static_cast<double>(n);
  loss_count_ += static_cast<double>(n);
  return total;
}

Logs Trainer::train_on_batch(const data::Element& batch) {
  reset_metrics();
  step(batch, true);
  return logs();
}

Logs Trainer::test_on_batch(const data::Element& batch) {
  reset_metrics();
  step(batch, false);
  return logs();
}

Logs Trainer::evaluate(const data::Dataset& data, const EvaluateOptions& options,
                       const std::vector<CallbackPtr>* fit_callbacks) {
  std::vector<CallbackPtr> cbs = fit_callbacks ? *fit_callbacks : options.callbacks;
  if (!fit_callbacks && options.verbose > 0 && model_.is_chief())
    cbs.push_back(std::make_shared<callbacks::ProgbarLogger>());
  callbacks::Params params;
  params.verbose = options.verbose;
  const std::int64_t card = data.cardinality();
  params.steps = options.steps ? *options.steps : card >= 0 ? card : -1;
  if (!fit_callbacks)
    each(cbs, [&](callbacks::Callback& cb) {
      cb.set_model(&model_);
      cb.set_params(params);
    });
  reset_metrics();
  each(cbs, [&](callbacks::Callback& cb) { cb.on_test_begin(Logs()); });
  auto it = data.make_iterator();
  std::int64_t s = 0;
  while (!options.steps || s < *options.steps) {
    std::optional<data::Element> batch = it->next();
    if (!batch) break;
    each(cbs, [&](callbacks::Callback& cb) { cb.on_test_batch_begin(s, Logs()); });
    step(*batch, false);
    Logs l = logs();
    l.set("size", static_cast<double>((*batch)[0].dim(0)));
    each(cbs, [&](callbacks::Callback& cb) { cb.on_test_batch_end(s, l); });
    ++s;
  }
  if (s == 0) throw std::invalid_argument("Model '" + model_.name() + "': evaluate() got no batches");
  Logs result = logs();
  each(cbs, [&](callbacks::Callback& cb) { cb.on_test_end(result); });
  return result;
}

callbacks::History Trainer::fit(const data::Dataset& train, const FitOptions& options) {
  if (options.epochs < 0 || options.initial_epoch < 0 || options.initial_epoch > options.epochs)
    throw std::invalid_argument("Model '" + model_.name() + "': fit(): epochs " + std::to_string(options.epochs) +
                                " and initial_epoch " + std::to_string(options.initial_epoch) + " do not fit");
  class_weight_ = options.class_weight;
  auto history = std::make_shared<callbacks::History>();
  std::vector<CallbackPtr> cbs = options.callbacks;
  // Only the chief of a multi-worker strategy shows progress.
  if (options.verbose > 0 && model_.is_chief()) cbs.push_back(std::make_shared<callbacks::ProgbarLogger>());
  cbs.push_back(history);
  callbacks::Params params;
  params.epochs = options.epochs;
  params.verbose = options.verbose;
  const std::int64_t card = train.cardinality();
  params.steps = options.steps_per_epoch ? *options.steps_per_epoch : card >= 0 ? card : -1;
  each(cbs, [&](callbacks::Callback& cb) {
    cb.set_model(&model_);
    cb.set_params(params);
  });
  model_.stop_training = false;
  model_.resume_epoch = -1;
  each(cbs, [&](callbacks::Callback& cb) { cb.on_train_begin(Logs()); });
  const int first_epoch = model_.resume_epoch >= 0 ? model_.resume_epoch : options.initial_epoch;
  model_.resume_epoch = -1;
  std::unique_ptr<data::Iterator> it;
  for (int epoch = first_epoch; epoch < options.epochs && !model_.stop_training; ++epoch) {
    reset_metrics();
    each(cbs, [&](callbacks::Callback& cb) { cb.on_epoch_begin(epoch, Logs()); });
    // With steps_per_epoch the iterator carries over between epochs, restarting when the data runs out.
    if (!it || !options.steps_per_epoch) it = train.make_iterator();
    std::int64_t s = 0;
    bool restarted = false;
    while (!options.steps_per_epoch || s < *options.steps_per_epoch) {
      std::optional<data::Element> batch = it->next();
      if (!batch) {
        if (!options.steps_per_epoch || restarted) break;
        it = train.make_iterator();
        restarted = true;
        continue;
      }
      restarted = false;
      each(cbs, [&](callbacks::Callback& cb) { cb.on_train_batch_begin(s, Logs()); });
      step(*batch, true);
      Logs l = logs();
      l.set("size", static_cast<double>((*batch)[0].dim(0)));
      each(cbs, [&](callbacks::Callback& cb) { cb.on_train_batch_end(s, l); });
      ++s;
      if (model_.stop_training) break;
    }
    if (s == 0) throw std::invalid_argument("Model '" + model_.name() + "': fit() got no training batches");
    Logs epoch_logs = logs();
    if (options.validation_data && (epoch + 1) % std::max(1, options.validation_freq) == 0) {
      EvaluateOptions eo;
      eo.steps = options.validation_steps;
      eo.verbose = 0;
      Logs val = evaluate(*options.validation_data, eo, &cbs);
      for (const auto& [k, v] : val.entries()) epoch_logs.set("val_" + k, v);
    }
    each(cbs, [&](callbacks::Callback& cb) { cb.on_epoch_end(epoch, epoch_logs); });
  }
  each(cbs, [&](callbacks::Callback& cb) { cb.on_train_end(Logs()); });
  return *history;
}

}  // namespace tower::detail
