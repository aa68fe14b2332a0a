// Built only with gRPC (TOWER_WITH_GRPC).
#ifdef TOWER_WITH_GRPC
#include "distribute/detail/parameter_server_shard.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "api/optimizers/optimizer.h"
#include "distribute/detail/variable_transfer.h"

namespace tower::distribute::detail {

namespace {

const char* const kWho = "ParameterServerStrategy: ";
// Room for a Tensor's field tags, lengths and index, and for the message's other fields.
constexpr std::size_t kBytesPerTensor = 32;
constexpr std::size_t kMessageMargin = 64 * 1024;

grpc::Status invalid(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, kWho + message);
}

}  // namespace

ParameterServerShard::ParameterServerShard(ModelImpl& model, std::size_t index, std::size_t count, std::string who,
                                           EndedFits& ended)
    : model_(model), index_(index), count_(count), who_(std::move(who)), ended_(ended) {}

std::size_t ParameterServerShard::message_bytes(const ModelImpl& model, std::size_t count) {
  std::vector<std::size_t> bytes(std::max<std::size_t>(count, 1), 0);
  const std::vector<VariablePtr> weights = model.weights();
  for (std::size_t k = 0; k < weights.size(); ++k)
    bytes[k % bytes.size()] += weights[k]->value.nbytes() + kBytesPerTensor;
  return *std::max_element(bytes.begin(), bytes.end()) + kMessageMargin;
}

ParameterServerShard::Weights ParameterServerShard::current_weights() const {
  Weights w{model_.weights(), {}};
  for (const VariablePtr& v : model_.trainable_weights()) w.trainable.insert(v.get());
  return w;
}

grpc::Status ParameterServerShard::check_fit(std::uint64_t fit, const char* what) const {
  if (fit != 0 && fit == fit_) return grpc::Status::OK;
  std::string why;
  if (ended_.contains(fit)) why = "fit " + std::to_string(fit) + " has ended";
  else if (fit_ == 0) why = "it is in no fit (the chief has not initialized it)";
  else why = "it is in fit " + std::to_string(fit_) + ", not " + std::to_string(fit);
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      std::string(kWho) + who_ + " refused " + what + ": " + why + "; nothing was applied");
}

grpc::Status ParameterServerShard::check_tensors(const google::protobuf::RepeatedPtrField<ps::Tensor>& tensors,
                                                 const char* what, int trainable, const Weights& weights,
                                                 std::set<std::uint32_t>& seen) const {
  for (const ps::Tensor& t : tensors) {
    const auto name = [&] { return std::string(what) + " of variable " + std::to_string(t.index()); };
    if (t.index() >= weights.all.size())
      return invalid(who_ + " got the " + name() + ", which does not exist: model '" + model_.name() + "' has " +
                     std::to_string(weights.all.size()) + " weights here (do all processes build the same model?)");
    const Variable& v = *weights.all[t.index()];
    if (t.index() % count_ != index_)
      return invalid(who_ + " got the " + name() + " (" + v.path + "), which parameter server " +
                     std::to_string(t.index() % count_) + " holds");
    if (!seen.insert(t.index()).second)
      return invalid(who_ + " got variable " + std::to_string(t.index()) + " (" + v.path + ") twice in one request");
    if (t.data().size() != v.value.nbytes())
      return invalid(who_ + " got the " + name() + " (" + v.path + ", shape " + v.value.shape().to_string() + ") with " +
                     std::to_string(t.data().size()) + " bytes, expected " + std::to_string(v.value.nbytes()) +
                     ": do all processes build the same model?");
    if (trainable == 1 && !weights.trainable.count(&v))
      return invalid(who_ + " got a gradient of variable " + std::to_string(t.index()) + " (" + v.path +
                     "), which is not trainable");
    if (trainable == 0 && weights.trainable.count(&v))
      return invalid(who_ + " got a value of variable " + std::to_string(t.index()) + " (" + v.path +
                     "), which is trainable: only its gradients change it");
  }
  return grpc::Status::OK;
}

grpc::Status ParameterServerShard::initialize(const ps::Variables& request) {
  if (request.fit() == 0) return invalid(who_ + " got an Initialize without a fit id");
  if (ended_.contains(request.fit())) return check_fit(request.fit(), "an Initialize");
  std::set<std::uint32_t> seen;
  const Weights weights = current_weights();
  if (grpc::Status s = check_tensors(request.variables(), "value", -1, weights, seen); !s.ok()) return s;
  for (const ps::Tensor& t : request.variables()) {
    Variable& v = *weights.all[t.index()];
    read_tensor(t, v, v.value);
  }
  fit_ = request.fit();
  return grpc::Status::OK;
}

grpc::Status ParameterServerShard::pull(const ps::PullRequest& request, ps::Variables* reply) const {
  if (grpc::Status s = check_fit(request.fit(), "a Pull"); !s.ok()) return s;
  const std::vector<VariablePtr> weights = model_.weights();
  for (std::size_t k = index_; k < weights.size(); k += count_) write_tensor(reply->add_variables(), k, weights[k]->value);
  return grpc::Status::OK;
}

grpc::Status ParameterServerShard::push(const ps::PushRequest& request) {
  if (grpc::Status s = check_fit(request.fit(), "a Push"); !s.ok()) return s;
  std::set<std::uint32_t> seen;
  const Weights weights = current_weights();
  if (grpc::Status s = check_tensors(request.gradients(), "gradient", 1, weights, seen); !s.ok()) return s;
  if (grpc::Status s = check_tensors(request.values(), "value", 0, weights, seen); !s.ok()) return s;
  // A worker's step has the gradients of every trainable variable of the shard: the optimizer's state is built for
  // that set at the first step and serves no other.
  std::size_t trainables = 0;
  for (std::size_t k = index_; k < weights.all.size(); k += count_) trainables += weights.trainable.count(weights.all[k].get());
  if (request.gradients_size() > 0 && static_cast<std::size_t>(request.gradients_size()) != trainables)
    return invalid(who_ + " got the gradients of " + std::to_string(request.gradients_size()) + " of the " +
                   std::to_string(trainables) + " trainable variables it holds: a step pushes all of them");
  const optimizers::OptimizerPtr& optimizer = model_.optimizer();
  if (request.gradients_size() > 0 && !optimizer)
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        std::string(kWho) + who_ + ": model '" + model_.name() + "' is not compiled");
  std::vector<VariablePtr> variables;
  std::vector<Tensor> gradients;
  for (const ps::Tensor& t : request.gradients()) {
    const VariablePtr& v = weights.all[t.index()];
    Tensor g(v->value.shape(), v->value.dtype(), v->value.device());
    read_tensor(t, *v, g);
    if (v->regularizer.active()) v->regularizer.add_gradient(v->value, g);
    variables.push_back(v);
    gradients.push_back(g);
  }
  if (!variables.empty()) optimizer->apply_gradients(variables, gradients);
  for (const ps::Tensor& t : request.values()) {
    Variable& v = *weights.all[t.index()];
    read_tensor(t, v, v.value);
  }
  return grpc::Status::OK;
}

void ParameterServerShard::end_fit() {
  if (fit_ != 0) ended_.add(fit_);
  fit_ = 0;
}

void write_tensor(ps::Tensor* out, std::size_t index, const Tensor& value) {
  out->set_index(static_cast<std::uint32_t>(index));
  copy_out(value, *out->mutable_data());
}

void read_tensor(const ps::Tensor& in, const Variable& variable, Tensor& target) {
  if (in.data().size() != target.nbytes())
    throw std::invalid_argument(std::string(kWho) + "variable " + std::to_string(in.index()) + " (" + variable.path +
                                ", shape " + target.shape().to_string() + ") got " + std::to_string(in.data().size()) +
                                " bytes, expected " + std::to_string(target.nbytes()) +
                                ": do all processes build the same model?");
  copy_into(in.data(), target);
}

}  // namespace tower::distribute::detail
#endif
