#pragma once
// A parameter server's shard of a model's variables and the requests that read and change it
// (parameter_server_strategy.h), without the network: what the gRPC handlers run, and what the fuzz target
// tests/fuzz/parameter_server_fuzz.cpp feeds. Each request is checked whole before any of it is applied, so a
// refused request changes nothing. Built only with gRPC (the messages are parameter_server.proto's).
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <grpcpp/support/status.h>

#include "api/models/model.h"
#include "parameter_server.pb.h"

namespace tower::distribute::detail {

// The ids of the fits a process has ended, which any thread may ask about: a request of one is refused at once,
// whether or not the process is in another fit.
class EndedFits {
 public:
  void add(std::uint64_t fit) {
    std::lock_guard lock(mutex_);
    ids_.insert(fit);
  }
  bool contains(std::uint64_t fit) const {
    std::lock_guard lock(mutex_);
    return ids_.count(fit) > 0;
  }

 private:
  mutable std::mutex mutex_;
  std::set<std::uint64_t> ids_;
};

// Variable k of the model's weights() belongs to shard k % count.
class ParameterServerShard {
 public:
  // Shard `index` of `count` over `model`'s weights(); `who` names this process in the statuses; `ended` is the
  // process's record of ended fits.
  ParameterServerShard(ModelImpl& model, std::size_t index, std::size_t count, std::string who, EndedFits& ended);

  // The bound on a message holding any one shard of `model` (Initialize, Push, Pull's reply) when the variables
  // are sharded `count` ways: the largest shard's bytes with room for the fields around them.
  static std::size_t message_bytes(const ModelImpl& model, std::size_t count);

  // Fit request.fit() begins (the chief's values of the shard); a fit of id 0, a variable out of the shard or of
  // the wrong size, or one given twice is INVALID_ARGUMENT and the shard keeps its values and its fit.
  grpc::Status initialize(const ps::Variables& request);
  // The shard's values, for a pull of the current fit.
  grpc::Status pull(const ps::PullRequest& request, ps::Variables* reply) const;
  // Applies the model's optimizer to the shard with the gradients (of every trainable variable of the shard, or
  // none) and takes the values (of variables that are not trainable), for a push of the current fit.
  grpc::Status push(const ps::PushRequest& request);
  // The current fit ended (the chief's Shutdown): its later requests are refused with FAILED_PRECONDITION.
  void end_fit();
  std::uint64_t fit() const { return fit_; }

 private:
  // The model's weights() and which of them are trainable, read once per request.
  struct Weights {
    std::vector<VariablePtr> all;
    std::set<const Variable*> trainable;
  };
  Weights current_weights() const;
  grpc::Status check_fit(std::uint64_t fit, const char* what) const;
  // Every tensor's index in the shard, none twice (also across `seen`), and of its variable's size; with
  // `trainable` 1 or 0, each a trainable variable (gradients) or not (values).
  grpc::Status check_tensors(const google::protobuf::RepeatedPtrField<ps::Tensor>& tensors, const char* what,
                             int trainable, const Weights& weights, std::set<std::uint32_t>& seen) const;

  ModelImpl& model_;
  std::size_t index_, count_;
  std::string who_;
  EndedFits& ended_;
  std::uint64_t fit_ = 0;
};

// One device-to-host copy of `value` into the message (variable_transfer.h).
void write_tensor(ps::Tensor* out, std::size_t index, const Tensor& value);
// Copies a received value into `target` (float32, on the device that computes with it) with one copy; throws
// std::invalid_argument when its size differs.
void read_tensor(const ps::Tensor& in, const Variable& variable, Tensor& target);

}  // namespace tower::distribute::detail
