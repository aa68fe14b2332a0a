#include "distribute/custom_loop.h"

#include <stdexcept>
#include <string>

#include "api/backend/backend.h"
#include "api/engine/replica_context.h"

namespace tower::distribute {

DistributedDataset::DistributedDataset(Strategy strategy, data::Dataset data)
    : strategy_(std::move(strategy)), data_(std::move(data)) {}

std::optional<DistributedBatch> DistributedDataset::Iterator::next() {
  std::optional<data::Element> element = it_->next();
  if (!element) return std::nullopt;
  if (element->empty() || (*element)[0].rank() == 0)
    throw std::invalid_argument("distribute_dataset: the dataset must yield batches (components of shape [N, ...])");
  return DistributedBatch{std::move(*element)};
}

DistributedDataset distribute_dataset(const Strategy& strategy, data::Dataset data) {
  return DistributedDataset(strategy, std::move(data));
}

int ReplicaStep::replica_id_in_sync_group() const {
  const ReplicaContext* context = plan_->options().replica;
  return context ? context->replica_id_in_sync_group() : 0;
}

int ReplicaStep::num_replicas_in_sync() const {
  const ReplicaContext* context = plan_->options().replica;
  return context ? context->num_replicas_in_sync() : 1;
}

std::vector<Tensor> ReplicaStep::call(GradientTape& tape, const std::vector<Tensor>& inputs) const {
  return tape.call(*plan_, inputs);
}

Tensor ReplicaStep::call(GradientTape& tape, const Tensor& x) const {
  std::vector<Tensor> out = call(tape, std::vector<Tensor>{x});
  if (out.size() != 1)
    throw std::invalid_argument("ReplicaStep::call: the model has " + std::to_string(out.size()) +
                                " outputs; call it with a list of inputs to get them all");
  return out[0];
}

namespace detail {

namespace {

// The model's replicas under `strategy`; null when it runs unreplicated. Throws for a model of another strategy.
tower::detail::Replicas* replicas_of(const Strategy& strategy, ModelImpl& model) {
  const tower::detail::DistributionPtr& own = model.distribution();
  if (own && own != std::static_pointer_cast<tower::detail::Distribution>(strategy.impl()))
    throw std::invalid_argument("distribute::run: model '" + model.name() +
                                "' was made (or compiled) under another strategy's scope than this " +
                                strategy.type() + "; make it inside this strategy's scope()");
  if (!own && strategy.num_replicas_in_sync() > 1)
    throw std::invalid_argument("distribute::run: model '" + model.name() + "' was made outside the scope of this " +
                                strategy.type() + " (" + std::to_string(strategy.num_replicas_in_sync()) +
                                " replicas); make it inside strategy.scope()");
  return model.replicas();
}

data::Element rows_of(const data::Element& batch, Index begin, Index end) {
  data::Element rows;
  rows.reserve(batch.size());
  const bool whole = begin == 0 && end == batch[0].dim(0);
  for (const Tensor& t : batch) rows.push_back(whole || t.rank() == 0 ? t : t.slice(begin, end));
  return rows;
}

}  // namespace

int local_replica_count(const Strategy& strategy, ModelImpl& model) {
  tower::detail::Replicas* replicas = replicas_of(strategy, model);
  return replicas ? replicas->num_local() : 1;
}

void run_replicas(const Strategy& strategy, ModelImpl& model, const DistributedBatch& batch,
                  const std::function<void(ReplicaStep&)>& fn) {
  const Index n = batch.size();
  if (n <= 0) throw std::invalid_argument("distribute::run: an empty batch");
  tower::detail::Replicas* replicas = replicas_of(strategy, model);
  if (!replicas) {
    ReplicaStep step(model.plan_for(n, true), batch.global, n, 0);
    fn(step);
    return;
  }
  replicas->sync_before_run();
  const int local = replicas->num_local();
  // The steps are made here, on this thread (plans are made on first use and kept), and run on the replica threads.
  std::vector<std::optional<ReplicaStep>> steps(static_cast<std::size_t>(local));
  std::vector<ReplicaContext*> contexts(static_cast<std::size_t>(local), nullptr);
  for (int r = 0; r < local; ++r) {
    const auto [begin, end] = replicas->slice(n, r);
    if (end <= begin) continue;
    Plan& plan = replicas->plan(r, end - begin, true);
    contexts[static_cast<std::size_t>(r)] = plan.options().replica;
    steps[static_cast<std::size_t>(r)].emplace(plan, rows_of(batch.global, begin, end), n, r);
  }
  auto work = [&](int r) {
    // fn runs in replica context: Optimizer::apply_gradients sums over the replicas (current_replica_context).
    const ReplicaContextScope scope(contexts[static_cast<std::size_t>(r)]);
    if (auto& step = steps[static_cast<std::size_t>(r)]) fn(*step);
  };
  replicas->run(n, tower::detail::ReplicaWork(work), false);
  // As after fit's steps: the first replica's moving statistics reach the central variables, the other workers
  // and the other replicas' copies.
  replicas->after_update();
}

}  // namespace detail

namespace {

void check_single_worker(const Strategy& strategy) {
  if (strategy.num_workers() > 1)
    throw std::logic_error("distribute::reduce: " + strategy.type() + " has " + std::to_string(strategy.num_workers()) +
                           " workers; reduce sums this worker's replicas only, so it runs on one worker");
}

// Replicas without rows of a short batch return no value; more values than replicas in sync are not per replica.
void check_count(const Strategy& strategy, std::size_t values) {
  if (values == 0) throw std::invalid_argument("distribute::reduce: no per-replica values");
  if (values > static_cast<std::size_t>(strategy.num_replicas_in_sync()))
    throw std::invalid_argument("distribute::reduce: " + std::to_string(values) + " per-replica values for " +
                                strategy.type() + "'s " + std::to_string(strategy.num_replicas_in_sync()) +
                                " replicas in sync");
}

// The sum of the defined tensors of `values` (undefined when none is), on the first one's device, divided by
// `replicas` (the replicas in sync) for MEAN.
Tensor reduce_one(ReduceOp op, const std::vector<const Tensor*>& values, int replicas) {
  Tensor sum;
  for (const Tensor* v : values) {
    if (!v->defined()) continue;
    if (v->dtype() != DType::float32)
      throw std::invalid_argument("distribute::reduce: values must be float32, got " + dtype_name(v->dtype()));
    if (!sum.defined()) {
      sum = v->clone();
      continue;
    }
    if (v->shape() != sum.shape())
      throw std::invalid_argument("distribute::reduce: per-replica values of shapes " + sum.shape().to_string() +
                                  " and " + v->shape().to_string());
    const Tensor x = v->device() == sum.device() ? *v : v->to(sum.device());
    backend::get(sum.device()).add(sum.data<float>(), x.data<float>(), sum.data<float>(), sum.numel());
  }
  if (sum.defined() && op == ReduceOp::MEAN)
    backend::get(sum.device())
        .axpby(1.f / static_cast<float>(replicas), sum.data<float>(), 0.f, sum.data<float>(), sum.numel());
  return sum;
}

}  // namespace

Tensor reduce(const Strategy& strategy, ReduceOp op, const PerReplica<Tensor>& values) {
  check_single_worker(strategy);
  check_count(strategy, values.values.size());
  std::vector<const Tensor*> all;
  for (const Tensor& v : values.values) all.push_back(&v);
  return reduce_one(op, all, strategy.num_replicas_in_sync());
}

std::vector<Tensor> reduce(const Strategy& strategy, ReduceOp op, const PerReplica<std::vector<Tensor>>& values) {
  check_single_worker(strategy);
  check_count(strategy, values.values.size());
  const std::size_t count = values.values[0].size();
  for (const auto& v : values.values)
    if (v.size() != count)
      throw std::invalid_argument("distribute::reduce: per-replica lists of " + std::to_string(count) + " and " +
                                  std::to_string(v.size()) + " values");
  std::vector<Tensor> out;
  out.reserve(count);
  std::vector<const Tensor*> at(values.values.size());
  for (std::size_t k = 0; k < count; ++k) {
    for (std::size_t r = 0; r < values.values.size(); ++r) at[r] = &values.values[r][k];
    out.push_back(reduce_one(op, at, strategy.num_replicas_in_sync()));
  }
  return out;
}

}  // namespace tower::distribute
