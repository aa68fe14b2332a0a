#pragma once
// StepGraphs: when fit's training step runs as a captured CUDA graph. The training loop hands it, for every
// step of a plan, the capturable part of the step (the plan's forward, the losses' forward and backward, the
// plan's backward) as a body, and it decides, per plan:
//   - the first `eager_steps` consecutive steps of a plan run op by op: layers make their state, libraries choose
//     their algorithms, workspaces reach their size. A plan that alternates with another (the short last batch
//     of an epoch) never reaches that count, so it is never captured;
//   - the next step is captured: the capturer records the body into a graph (nothing runs), which is replayed
//     at once for this step;
//   - later steps replay the graph;
//   - a capture that fails runs the step op by op, and that plan is not captured again (until clear());
//   - a step whose addresses (the fingerprint: the plan's serial, its weights, the staged inputs and buffers)
//     differ from those the graph was captured with drops the graph and counts eager steps again.
// Whatever the step reads that changes from step to step must be in memory the caller rewrites before run()
// (staged inputs, the plan's step values): a replay reuses every argument it was captured with.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "api/backend/backend.h"

namespace tower::detail {

// Records a step's ops into a graph: the device's backend in fit (BackendCapturer), a fake in tests.
class StepCapturer {
 public:
  virtual ~StepCapturer() = default;
  // The graph of `body`'s ops, not run; null when they cannot be captured (then nothing has run either).
  virtual std::unique_ptr<backend::StepGraph> capture(const std::function<void()>& body) = 0;
};

// Captures with backend::get(device): begin_capture, the body, end_capture. An exception in the body ends the
// capture cleanly and counts as a failed capture (logged once).
class BackendCapturer final : public StepCapturer {
 public:
  explicit BackendCapturer(Device device) : device_(device) {}
  Device device() const { return device_; }
  std::unique_ptr<backend::StepGraph> capture(const std::function<void()>& body) override;

 private:
  Device device_;
  bool logged_ = false;
};

class StepGraphs {
 public:
  enum class Ran { eager, captured, replayed };
  using Fingerprint = std::vector<std::uintptr_t>;

  explicit StepGraphs(int eager_steps = 2) : eager_steps_(eager_steps) {}

  // Runs one step of the plan `key` as the rules above say; returns how it ran.
  Ran run(StepCapturer& capturer, const void* key, const Fingerprint& fingerprint, const std::function<void()>& body);
  // Drops every graph and every count: the plans were remade, the model moved, compile() ran again.
  void clear();
  // Graphs held now.
  std::size_t graphs() const;
  // How the steps since construction ran.
  struct Counts {
    std::int64_t eager = 0, captured = 0, replayed = 0;
  };
  const Counts& counts() const { return counts_; }

 private:
  struct Entry {
    Fingerprint fingerprint;
    int eager_runs = 0;  // consecutive ones, before a capture
    bool uncapturable = false;
    std::unique_ptr<backend::StepGraph> graph;
  };

  Ran count(Ran ran);

  int eager_steps_;
  Counts counts_;
  std::map<const void*, Entry> entries_;
  const void* last_key_ = nullptr;
};

}  // namespace tower::detail
