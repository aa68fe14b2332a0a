#include "api/ops/recorder.h"

#include <algorithm>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "api/ops/ops.h"

namespace tower::ops {

namespace {

struct Open {
  Recorder* recorder;
  bool exclusive;
  const RecordingScope* scope;
};

// The recorders open on each thread. A scope may close on another thread than the one it opened on (a tape deleted
// elsewhere), so the lists live in one map under a lock rather than in thread-locals another thread cannot reach.
std::mutex open_mutex;
std::unordered_map<std::thread::id, std::vector<Open>> open_recorders;
thread_local int pauses = 0;
thread_local const std::vector<bool>* needed_inputs = nullptr;

std::vector<Open> open_here() {
  const std::lock_guard<std::mutex> lock(open_mutex);
  const auto it = open_recorders.find(std::this_thread::get_id());
  return it == open_recorders.end() ? std::vector<Open>{} : it->second;
}

}  // namespace

bool recording() {
  if (pauses > 0) return false;
  const std::lock_guard<std::mutex> lock(open_mutex);
  return open_recorders.count(std::this_thread::get_id()) > 0;  // a thread's entry goes with its last recorder
}

void record(Record r) {
  if (pauses > 0) return;
  // The recorders from the innermost exclusive one on.
  const std::vector<Open> open = open_here();
  std::size_t first = open.size();
  while (first > 0 && !open[first - 1].exclusive) --first;
  if (first > 0) --first;
  for (std::size_t i = first; i < open.size(); ++i) open[i].recorder->record(r);
}

RecordingScope::RecordingScope(Recorder& recorder, bool exclusive) : recorder_(&recorder), exclusive_(exclusive) {
  const std::lock_guard<std::mutex> lock(open_mutex);
  open_recorders[std::this_thread::get_id()].push_back({recorder_, exclusive_, this});
}

RecordingScope::~RecordingScope() {
  const std::lock_guard<std::mutex> lock(open_mutex);
  for (auto thread = open_recorders.begin(); thread != open_recorders.end(); ++thread) {
    std::vector<Open>& list = thread->second;
    const auto it = std::find_if(list.begin(), list.end(), [&](const Open& o) { return o.scope == this; });
    if (it == list.end()) continue;
    list.erase(it);
    if (list.empty()) open_recorders.erase(thread);
    return;
  }
}

bool input_needs_gradient(std::size_t k) {
  return needed_inputs == nullptr || k >= needed_inputs->size() || (*needed_inputs)[k];
}

NeededInputs::NeededInputs(const std::vector<bool>* needed) : previous_(needed_inputs) { needed_inputs = needed; }
NeededInputs::~NeededInputs() { needed_inputs = previous_; }

PauseRecording::PauseRecording() { ++pauses; }
PauseRecording::~PauseRecording() { --pauses; }

int Recording::value_of(const Tensor& t) const {
  if (!t.defined()) return -1;
  const auto it = by_address_.find(t.raw_data());
  if (it == by_address_.end()) return -1;
  return values_[static_cast<std::size_t>(it->second)].shape() == t.shape() ? it->second : -1;
}

int Recording::add_value(const Tensor& t) {
  const int id = static_cast<int>(values_.size());
  values_.push_back(t);
  by_address_[t.raw_data()] = id;
  return id;
}

void Recording::watch(const Tensor& tensor) {
  if (value_of(tensor) < 0) add_value(tensor);
}

void Recording::record(const Record& r) {
  std::vector<int> ids;
  bool any = false;
  for (const Tensor& t : r.inputs) {
    ids.push_back(value_of(t));
    any = any || ids.back() >= 0;
  }
  if (!any) return;
  nodes_.push_back(Node{std::move(ids), add_value(r.output), r.backward});
}

std::vector<Tensor> Recording::gradients(const std::vector<Tensor>& outputs, const std::vector<Tensor>& seeds,
                                         const std::vector<Tensor>& sources) const {
  const PauseRecording pause;
  // Which values lead back to a source (a source, or the result of an op with such an input): only their
  // gradients are computed.
  std::vector<bool> leads(values_.size(), false);
  for (const Tensor& s : sources)
    if (const int v = value_of(s); v >= 0) leads[static_cast<std::size_t>(v)] = true;
  for (const Node& n : nodes_)
    for (int i : n.inputs)
      if (i >= 0 && leads[static_cast<std::size_t>(i)]) leads[static_cast<std::size_t>(n.output)] = true;
  std::vector<Tensor> g(values_.size());
  const auto accumulate = [&](int v, const Tensor& contribution) {
    if (v < 0 || !contribution.defined() || !leads[static_cast<std::size_t>(v)]) return;
    Tensor& slot = g[static_cast<std::size_t>(v)];
    slot = slot.defined() ? add(slot, contribution) : contribution;
  };
  for (std::size_t i = 0; i < outputs.size() && i < seeds.size(); ++i) accumulate(value_of(outputs[i]), seeds[i]);
  std::vector<bool> needed;
  for (auto n = nodes_.rbegin(); n != nodes_.rend(); ++n) {
    const Tensor& go = g[static_cast<std::size_t>(n->output)];
    if (!go.defined()) continue;
    needed.assign(n->inputs.size(), false);
    for (std::size_t k = 0; k < n->inputs.size(); ++k)
      needed[k] = n->inputs[k] >= 0 && leads[static_cast<std::size_t>(n->inputs[k])];
    const NeededInputs marks(&needed);
    const std::vector<Tensor> gi = n->backward(go);
    for (std::size_t k = 0; k < gi.size() && k < n->inputs.size(); ++k) accumulate(n->inputs[k], gi[k]);
  }
  std::vector<Tensor> result;
  for (const Tensor& s : sources) {
    const int v = value_of(s);
    result.push_back(v >= 0 ? g[static_cast<std::size_t>(v)] : Tensor());
  }
  return result;
}

void Recording::clear() {
  values_.clear();
  nodes_.clear();
  by_address_.clear();
}

}  // namespace tower::ops
