#include "distribute/make_parallel.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "api/backend/backend.h"
#include "api/core/device_memory.h"
#include "distribute/detail/replica_threads.h"
#include "distribute/mirrored_strategy.h"

namespace tower::distribute {

namespace {

const char* const kWho = "make_parallel: ";

std::string shape_beyond_batch(const Tensor& t) {
  std::string s = "[";
  for (int a = 1; a < t.rank(); ++a) s += (a > 1 ? ", " : "") + std::to_string(t.dim(a));
  return s + "]";
}

// One parallel function: its towers' threads and what a call hands them.
class Towers {
 public:
  Towers(BatchedFunction fn, std::vector<LogicalDevice> devices)
      : fn_(std::move(fn)), devices_(std::move(devices)), outputs_(devices_.size()), errors_(devices_.size()) {
    const int k = static_cast<int>(devices_.size());
    if (k > 1)
      threads_ = std::make_unique<detail::ReplicaThreads>(k, std::max(1, backend::num_threads() / k),
                                                          [this](int t) { run_tower(t); });
  }

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) {
    const std::lock_guard lock(mutex_);
    const Index n = batch_size(inputs);
    inputs_ = &inputs;
    n_ = n;
    std::fill(errors_.begin(), errors_.end(), nullptr);
    if (threads_)
      threads_->run();
    else
      run_tower(0);
    inputs_ = nullptr;
    for (const std::exception_ptr& e : errors_)
      if (e) std::rethrow_exception(e);
    std::vector<Tensor> merged = concatenate();
    for (std::vector<Tensor>& o : outputs_) o.clear();
    return merged;
  }

 private:
  Index batch_size(const std::vector<Tensor>& inputs) const {
    if (inputs.empty()) throw std::invalid_argument(std::string(kWho) + "called with no input; it splits batched inputs");
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (!inputs[i].defined() || inputs[i].rank() == 0)
        throw std::invalid_argument(std::string(kWho) + "input " + std::to_string(i) +
                                    " has no batch axis (rank 0 or undefined); inputs are split along axis 0");
    const Index n = inputs[0].dim(0);
    for (std::size_t i = 1; i < inputs.size(); ++i)
      if (inputs[i].dim(0) != n)
        throw std::invalid_argument(std::string(kWho) + "input " + std::to_string(i) + " has " +
                                    std::to_string(inputs[i].dim(0)) + " rows, input 0 " + std::to_string(n) +
                                    "; every input must have the same batch size");
    if (n < static_cast<Index>(devices_.size()))
      throw std::invalid_argument(std::string(kWho) + "a batch of " + std::to_string(n) + " rows cannot be split over " +
                                  std::to_string(devices_.size()) + " towers (" + devices_[0].name + ", ...): every "
                                  "tower needs at least one row");
    return n;
  }

  void run_tower(int t) {
    const auto ut = static_cast<std::size_t>(t);
    try {
      const Device device = devices_[ut].device;
      const auto [begin, end] = detail::tower_rows(n_, t, static_cast<int>(devices_.size()));
      std::vector<Tensor> pieces;
      for (const Tensor& x : *inputs_) {
        Tensor piece = x.slice(begin, end);
        pieces.push_back(piece.device() == device ? piece : piece.to(device));
      }
      outputs_[ut] = fn_(pieces);
    } catch (...) {
      errors_[ut] = std::current_exception();
    }
  }

  std::vector<Tensor> concatenate() const {
    const std::vector<Tensor>& first = outputs_[0];
    for (std::size_t t = 1; t < outputs_.size(); ++t)
      if (outputs_[t].size() != first.size())
        throw std::invalid_argument(std::string(kWho) + "the tower on " + devices_[t].name + " returned " +
                                    std::to_string(outputs_[t].size()) + " outputs, the tower on " + devices_[0].name +
                                    " " + std::to_string(first.size()) + "; every tower must return the same outputs");
    std::vector<Tensor> merged;
    for (std::size_t o = 0; o < first.size(); ++o) {
      Index rows = 0;
      for (std::size_t t = 0; t < outputs_.size(); ++t) {
        const Tensor& part = outputs_[t][o];
        if (!part.defined() || part.rank() == 0)
          throw std::invalid_argument(std::string(kWho) + "output " + std::to_string(o) + " of the tower on " +
                                      devices_[t].name + " has no batch axis (rank 0 or undefined); outputs are "
                                      "concatenated along axis 0");
        if (t > 0 && (part.dtype() != first[o].dtype() || part.rank() != first[o].rank() ||
                      shape_beyond_batch(part) != shape_beyond_batch(first[o])))
          throw std::invalid_argument(std::string(kWho) + "output " + std::to_string(o) + " of the tower on " +
                                      devices_[t].name + " is " + part.shape().to_string() + ", the tower on " +
                                      devices_[0].name + "'s " + first[o].shape().to_string() +
                                      " (dtype or shape beyond axis 0 differs); they cannot be concatenated");
        rows += part.dim(0);
      }
      std::vector<Index> dims{rows};
      for (int a = 1; a < first[o].rank(); ++a) dims.push_back(first[o].dim(a));
      Tensor out(Shape(dims), first[o].dtype(), devices_[0].device);
      auto* at = static_cast<char*>(out.raw_data());
      for (const std::vector<Tensor>& tower : outputs_) {
        const Tensor& part = tower[o];
        copy_bytes(at, out.device(), part.raw_data(), part.device(), part.nbytes());
        at += part.nbytes();
      }
      merged.push_back(std::move(out));
    }
    return merged;
  }

  BatchedFunction fn_;
  std::vector<LogicalDevice> devices_;
  std::mutex mutex_;  // one call at a time: a call's towers share the members below
  const std::vector<Tensor>* inputs_ = nullptr;
  Index n_ = 0;
  std::vector<std::vector<Tensor>> outputs_;
  std::vector<std::exception_ptr> errors_;
  std::unique_ptr<detail::ReplicaThreads> threads_;  // last: its threads stop before the rest goes
};

}  // namespace

namespace detail {

std::pair<Index, Index> tower_rows(Index n, int t, int towers) {
  const Index base = n / towers, extra = n % towers;
  const Index begin = t * base + std::min<Index>(t, extra);
  return {begin, begin + base + (t < extra ? 1 : 0)};
}

}  // namespace detail

BatchedFunction make_parallel(BatchedFunction fn, const std::vector<std::string>& devices) {
  if (!fn) throw std::invalid_argument(std::string(kWho) + "no function given");
  auto towers = std::make_shared<Towers>(std::move(fn), parse_device_list(devices, kWho));
  return [towers](const std::vector<Tensor>& inputs) { return (*towers)(inputs); };
}

Model make_parallel(const Model& model, const std::vector<std::string>& devices) {
  parse_device_list(devices, kWho);  // the errors of a device list, named as make_parallel's
  MirroredStrategy strategy(devices);
  const StrategyScope scope = strategy.scope();
  return Model(model.inputs(), model.outputs(), model.name() + "_parallel");
}

}  // namespace tower::distribute
