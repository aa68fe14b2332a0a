#include "api/models/inference_plans.h"

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace tower::detail {

InferencePlans::Lease::~Lease() {
  if (pool_) pool_->give_back(entry_);
}

InferencePlans::InferencePlans(InferenceOptions options) { set_options(options); }

void InferencePlans::set_options(InferenceOptions options) {
  if (options.max_shapes == 0) throw std::invalid_argument("InferenceOptions: max_shapes must be at least 1");
  clear();
  const std::lock_guard lock(mutex_);
  options_ = options;
}

std::size_t InferencePlans::plans_per_shape() const {
  if (options_.plans_per_shape > 0) return options_.plans_per_shape;
  return std::max<std::size_t>(1, std::thread::hardware_concurrency());
}

std::list<InferencePlans::Shapes>::iterator InferencePlans::find(const std::vector<Shape>& shapes) {
  return std::find_if(shapes_.begin(), shapes_.end(), [&](const Shapes& s) { return s.shapes == shapes; });
}

InferencePlans::Lease InferencePlans::acquire(const std::vector<Shape>& shapes, const Make& make) {
  std::unique_lock lock(mutex_);
  const std::size_t limit = plans_per_shape();
  std::list<Shapes>::iterator it;
  for (;;) {
    // Found again after each wait: the entry may have moved, or been dropped by clear() and made anew.
    it = find(shapes);
    if (it == shapes_.end()) {
      shapes_.push_front(Shapes{shapes, {}, {}, 0});
      it = shapes_.begin();
      drop_unused_shapes();
    } else if (it != shapes_.begin()) {
      shapes_.splice(shapes_.begin(), shapes_, it);  // the most recently used first
    }
    if (!it->idle.empty()) {
      InferencePlan* entry = it->idle.back();
      it->idle.pop_back();
      return Lease(this, entry);
    }
    if (it->plans.size() + it->making < limit) break;
    returned_.wait(lock);
  }
  ++it->making;
  const std::uint64_t generation = generation_;
  lock.unlock();
  auto entry = std::make_unique<InferencePlan>();
  try {
    entry->plan = make();
  } catch (...) {
    lock.lock();
    if (generation == generation_) --find(shapes)->making;
    lock.unlock();
    returned_.notify_all();
    throw;
  }
  lock.lock();
  InferencePlan* raw = entry.get();
  const auto at = generation == generation_ ? find(shapes) : shapes_.end();
  if (at == shapes_.end()) {  // cleared meanwhile: the plan serves this call and is dropped after it
    retired_.push_back(std::move(entry));
    return Lease(this, raw);
  }
  --at->making;
  at->plans.push_back(std::move(entry));
  return Lease(this, raw);
}

void InferencePlans::give_back(InferencePlan* entry) {
  {
    const std::lock_guard lock(mutex_);
    const auto retired = std::find_if(retired_.begin(), retired_.end(), [&](const auto& p) { return p.get() == entry; });
    if (retired != retired_.end()) {
      retired_.erase(retired);
    } else {
      for (Shapes& s : shapes_)
        if (std::any_of(s.plans.begin(), s.plans.end(), [&](const auto& p) { return p.get() == entry; })) {
          s.idle.push_back(entry);
          break;
        }
    }
    drop_unused_shapes();
  }
  returned_.notify_all();
}

void InferencePlans::drop_unused_shapes() {
  // From the least recently used, while there are too many shapes: only a shape none of whose plans is leased.
  for (auto it = shapes_.end(); shapes_.size() > options_.max_shapes && it != shapes_.begin();) {
    --it;
    if (it->leased() == 0) it = shapes_.erase(it);
  }
}

void InferencePlans::clear() {
  const std::lock_guard lock(mutex_);
  for (Shapes& s : shapes_)
    for (auto& p : s.plans)
      if (std::find(s.idle.begin(), s.idle.end(), p.get()) == s.idle.end()) retired_.push_back(std::move(p));
  shapes_.clear();
  ++generation_;
}

std::size_t InferencePlans::plan_count(const std::vector<Shape>& shapes) const {
  const std::lock_guard lock(mutex_);
  for (const Shapes& s : shapes_)
    if (s.shapes == shapes) return s.plans.size();
  return 0;
}

std::size_t InferencePlans::plan_count() const {
  const std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const Shapes& s : shapes_) n += s.plans.size();
  return n;
}

std::size_t InferencePlans::shape_count() const {
  const std::lock_guard lock(mutex_);
  return shapes_.size();
}

}  // namespace tower::detail
