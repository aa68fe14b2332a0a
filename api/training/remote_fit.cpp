#include <algorithm>
#include <stdexcept>
#include <string>

#include "api/models/model.h"
#include "api/training/training_loop.h"

namespace tower::detail {

using callbacks::CallbackPtr;
using callbacks::Logs;

namespace {

// The size-weighted means of the logs of the steps finished so far in an epoch.
class RunningLogs {
 public:
  void add(const RemoteTraining::StepLogs& step) {
    double size = 0;
    for (const auto& [key, value] : step)
      if (key == "size") size = value;
    for (const auto& entry : step) {
      const std::string& key = entry.first;  // not a structured binding: Clang before 16 cannot capture those
      if (key == "size") continue;
      auto it = std::find_if(sums_.begin(), sums_.end(), [&](const auto& e) { return e.first == key; });
      if (it == sums_.end()) it = sums_.insert(sums_.end(), {key, 0.0});
      it->second += entry.second * size;
    }
    examples_ += size;
  }
  Logs logs() const {
    Logs l;
    for (const auto& [key, sum] : sums_) l.set(key, examples_ > 0 ? sum / examples_ : 0.0);
    return l;
  }

 private:
  std::vector<std::pair<std::string, double>> sums_;
  double examples_ = 0;
};

double size_of(const RemoteTraining::StepLogs& step) {
  for (const auto& [key, value] : step)
    if (key == "size") return value;
  return 0;
}

}  // namespace

callbacks::History TrainingLoop::remote_fit(RemoteTraining& remote, const data::Dataset& train,
                                            const FitOptions& options) {
  if (!options.steps_per_epoch || *options.steps_per_epoch <= 0)
    throw std::invalid_argument("Model '" + model_.name() +
                                "': fit() under ParameterServerStrategy needs steps_per_epoch (> 0), as "
                                "TensorFlow's does: every worker repeats its own dataset, so an epoch has no end of "
                                "its own");
  switch (remote.role()) {
    case RemoteTraining::Role::coordinator:
      return coordinate_fit(remote, train, options);
    case RemoteTraining::Role::worker:
      serve_steps(remote, train);
      return callbacks::History();
    case RemoteTraining::Role::ps:
      remote.serve({});
      return callbacks::History();
  }
  return callbacks::History();
}

void TrainingLoop::serve_steps(RemoteTraining& remote, const data::Dataset& train) {
  std::unique_ptr<data::Iterator> it = train.make_iterator();
  remote.serve([&]() -> RemoteTraining::StepLogs {
    std::optional<data::Element> batch = it->next();
    if (!batch) {
      it = train.make_iterator();
      batch = it->next();
      if (!batch) throw std::invalid_argument("Model '" + model_.name() + "': this worker's dataset has no batches");
    }
    reset_metrics();
    step(*batch, Mode::train);
    RemoteTraining::StepLogs out = logs().entries();
    out.emplace_back("size", static_cast<double>((*batch)[0].dim(0)));
    return out;
  });
}

callbacks::History TrainingLoop::coordinate_fit(RemoteTraining& remote, const data::Dataset& train,
                                                const FitOptions& options) {
  // fit() has checked the epochs, remote_fit() steps_per_epoch.
  const std::int64_t steps = *options.steps_per_epoch;
  auto history = std::make_shared<callbacks::History>();
  std::vector<CallbackPtr> cbs = options.callbacks;
  start_callbacks(cbs, options.verbose, options.epochs, steps, history);
  const FitScope scope = begin_fit(cbs, train);
  const auto each = [&cbs](auto fn) {
    for (const CallbackPtr& cb : cbs) fn(*cb);
  };
  each([](callbacks::Callback& cb) { cb.before_train_begin(Logs()); });
  each([](callbacks::Callback& cb) { cb.on_train_begin(Logs()); });
  const int first_epoch = model_.resume_epoch >= 0 ? model_.resume_epoch : options.initial_epoch;
  model_.resume_epoch = -1;
  // After on_train_begin, which may restore weights (BackupAndRestore): the parameter servers start from them.
  remote.begin();
  Logs last_logs;  // on_train_end's: the last epoch's (Keras)
  try {
    for (int epoch = first_epoch; epoch < options.epochs && !model_.stop_training; ++epoch) {
      each([&](callbacks::Callback& cb) { cb.on_epoch_begin(epoch, Logs()); });
      RunningLogs running;
      remote.schedule(steps);
      for (std::int64_t s = 0; s < steps; ++s) {
        const RemoteTraining::StepLogs result = remote.next_result();
        each([&](callbacks::Callback& cb) { cb.on_train_batch_begin(s, Logs()); });
        running.add(result);
        Logs l = running.logs();
        l.set("size", size_of(result));
        each([&](callbacks::Callback& cb) { cb.on_train_batch_end(s, l); });
        if (model_.stop_training) {
          remote.cancel();
          break;
        }
      }
      // The callbacks and the validation read the model's variables: the parameter servers' values now.
      remote.pull();
      Logs epoch_logs = running.logs();
      if (options.validation_data && (epoch + 1) % std::max(1, options.validation_freq) == 0) {
        EvaluateOptions eo;
        eo.steps = options.validation_steps;
        eo.verbose = 0;
        Logs val = evaluate(*options.validation_data, eo, &cbs);
        for (const auto& [k, v] : val.entries()) epoch_logs.set("val_" + k, v);
      }
      each([&](callbacks::Callback& cb) {
        cb.add_epoch_logs(epoch, epoch_logs);
        cb.on_epoch_end(epoch, epoch_logs);
      });
      each([&](callbacks::Callback& cb) { cb.on_epoch_complete(epoch, epoch_logs); });
      last_logs = epoch_logs;
    }
  } catch (...) {
    remote.end();
    throw;
  }
  remote.end();
  each([&](callbacks::Callback& cb) { cb.on_train_end(last_logs); });
  return *history;
}

}  // namespace tower::detail
