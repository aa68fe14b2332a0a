#pragma once
// StepValues: the scalars that change from one training step to the next inside a plan's forward and backward
// (Dropout's seeds), kept in device memory. A captured CUDA graph bakes every kernel argument in, so an op whose
// argument changes per step reads it through a device pointer instead, from a buffer written before each step
// (and before each replay of the graph).
//
// A value comes from a source registered once (add), which is called for every step in registration order
// (refresh). The host mirror holds the values drawn last; refresh writes them there and uploads the mirror to
// the device in one copy.
//
// Random values derive from the steps' random state, (seed(), step()), rather than from a generator or a count a
// source keeps: a value then depends only on which step it is drawn for, so the state a resumed training needs is
// seed() and steps(), and plans that run in parallel (one per replica) never share a counter.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <vector>

#include "api/core/device.h"
#include "api/core/tensor.h"

namespace tower {

class ReplicaContext;

class StepValues {
 public:
  using Source = std::function<std::uint64_t()>;

  StepValues(Device device, std::uint64_t seed);
  StepValues(const StepValues&) = delete;
  StepValues& operator=(const StepValues&) = delete;

  Device device() const { return device_; }
  // Registers `source`, draws its value for the current step at once and uploads it; returns its slot. The
  // buffer may move: earlier device_value() pointers are void afterwards.
  int add(Source source);
  // Registers a source of random seeds (Dropout's masks, a recurrent layer's dropout masks): each step's value
  // mixes `seed` (the plan's seed() when not given), step(), the index in sync of `replica` (0 when null), the
  // slot's position among the plan's sources and `salt` (what the caller adds: its tensor's size, a mask's index),
  // so that two sources, two steps or two replicas draw unrelated values, the same in every run.
  int add_seed(std::optional<std::int64_t> seed, const ReplicaContext* replica,
               std::initializer_list<std::uint64_t> salt);
  // Starts the next step (step() becomes steps(), then steps() grows by one), calls every source in registration
  // order, writes the host mirror and uploads it (one copy).
  void refresh();
  // The plan's seed, which random sources derive their values from (with step()).
  std::uint64_t seed() const { return seed_; }
  void set_seed(std::uint64_t seed) { seed_ = seed; }
  // The step the values were drawn for last: 0 until the second refresh, then one more per refresh.
  std::uint64_t step() const { return step_; }
  // The steps refreshed so far. set_steps(n): the next refresh draws step n (a resumed training's plan).
  std::uint64_t steps() const { return steps_; }
  void set_steps(std::uint64_t steps) { steps_ = steps; }
  int size() const { return static_cast<int>(sources_.size()); }
  // The value of `slot` on the device (memory of device()), as last refreshed. Throws std::out_of_range for a
  // slot add() did not return.
  const std::uint64_t* device_value(int slot) const;
  // The same value in the host mirror.
  std::uint64_t host_value(int slot) const;

 private:
  void upload();
  void check_slot(int slot) const;

  Device device_;
  std::uint64_t seed_;
  std::uint64_t step_ = 0, steps_ = 0;
  std::vector<Source> sources_;
  Tensor host_, device_values_;  // int64 words holding the uint64 values; capacity >= size()
};

}  // namespace tower
