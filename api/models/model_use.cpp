#include "api/models/model_use.h"

#include <stdexcept>
#include <utility>
#include <vector>

namespace tower::detail {

ModelUse::Guard::~Guard() {
  if (use_) use_->release(kind_);
}

void ModelUse::trains_elsewhere(const std::string& model, const char* what) {
  throw std::logic_error("Model '" + model + "': " + what + " was called while the model trains (fit() or train_on_batch() on "
                         "another thread); inference and evaluation run before or after training, not during it");
}

int& ModelUse::held_here() const {
  // A thread holds guards of a few models at a time at most.
  thread_local std::vector<std::pair<const ModelUse*, int>> held;
  for (auto& [use, count] : held)
    if (use == this) return count;
  for (auto& entry : held)
    if (entry.second == 0) {
      entry.first = this;
      return entry.second;
    }
  return held.emplace_back(this, 0).second;
}

ModelUse::Guard ModelUse::inference(const std::string& model, const char* what) {
  std::unique_lock lock(mutex_);
  if (owns_exclusive() || owns_evaluation() || held_here() > 0) return Guard(this, Guard::Kind::nested);
  changed_.wait(lock, [&] { return training_ || (exclusive_depth_ == 0 && writers_waiting_ == 0); });
  if (training_) trains_elsewhere(model, what);
  ++inference_;
  ++held_here();
  return Guard(this, Guard::Kind::inference);
}

ModelUse::Guard ModelUse::evaluation(const std::string& model, const char* what) {
  std::unique_lock lock(mutex_);
  if (owns_exclusive()) return Guard(this, Guard::Kind::nested);
  if (owns_evaluation()) {
    ++evaluation_depth_;
    return Guard(this, Guard::Kind::evaluation);
  }
  // A writer waiting for this thread's own inference call to end does not hold up this thread's evaluation (a
  // predict callback's evaluate).
  const bool inferring = held_here() > 0;
  changed_.wait(lock, [&] {
    return training_ || (exclusive_depth_ == 0 && (inferring || writers_waiting_ == 0) && evaluation_depth_ == 0);
  });
  if (training_) trains_elsewhere(model, what);
  evaluation_owner_ = std::this_thread::get_id();
  evaluation_depth_ = 1;
  return Guard(this, Guard::Kind::evaluation);
}

ModelUse::Guard ModelUse::training() { return exclusive(true); }

ModelUse::Guard ModelUse::change() { return exclusive(false); }

ModelUse::Guard ModelUse::exclusive(bool training) {
  std::unique_lock lock(mutex_);
  if (owns_exclusive()) {
    ++exclusive_depth_;
    return Guard(this, Guard::Kind::exclusive);
  }
  if (held_here() > 0)
    throw std::logic_error(std::string("a model cannot be ") + (training ? "trained" : "changed") +
                           " inside one of its own inference calls (a predict callback, a layer's call)");
  // An evaluation of this thread's stays in flight: the others must end.
  const bool evaluating = owns_evaluation();
  ++writers_waiting_;
  changed_.wait(lock, [&] {
    return exclusive_depth_ == 0 && inference_ == 0 && (evaluating || evaluation_depth_ == 0);
  });
  --writers_waiting_;
  exclusive_owner_ = std::this_thread::get_id();
  exclusive_depth_ = 1;
  training_ = training;
  if (training) changed_.notify_all();  // the calls waiting behind it now throw
  return Guard(this, Guard::Kind::exclusive);
}

void ModelUse::release(Guard::Kind kind) {
  {
    const std::lock_guard lock(mutex_);
    switch (kind) {
      case Guard::Kind::inference:
        --inference_;
        --held_here();
        break;
      case Guard::Kind::evaluation: --evaluation_depth_; break;
      case Guard::Kind::exclusive:
        if (--exclusive_depth_ == 0) {
          training_ = false;
          exclusive_owner_ = {};
        }
        break;
      case Guard::Kind::nested: return;
    }
    if (evaluation_depth_ == 0) evaluation_owner_ = {};
  }
  changed_.notify_all();
}

int ModelUse::inference_in_flight() const {
  const std::lock_guard lock(mutex_);
  return inference_;
}

bool ModelUse::training_now() const {
  const std::lock_guard lock(mutex_);
  return training_;
}

}  // namespace tower::detail
