#include "api/training/step_graphs.h"

#include <exception>
#include <iostream>

namespace tower::detail {

std::unique_ptr<backend::StepGraph> BackendCapturer::capture(const std::function<void()>& body) {
  backend::Backend& be = backend::get(device_);
  if (!be.begin_capture()) return nullptr;
  try {
    body();
  } catch (const std::exception& e) {
    be.end_capture();
    if (!logged_)
      std::cerr << "Tower: a training step on " << device_.to_string() << " could not be captured as a CUDA graph ("
                << e.what() << "); such steps run op by op\n";
    logged_ = true;
    return nullptr;
  }
  return be.end_capture();
}

StepGraphs::Ran StepGraphs::run(StepCapturer& capturer, const void* key, const Fingerprint& fingerprint,
                                const std::function<void()>& body) {
  Entry& e = entries_[key];
  const bool consecutive = key == last_key_;
  last_key_ = key;
  if (e.fingerprint != fingerprint) {
    e = Entry();
    e.fingerprint = fingerprint;
  }
  if (e.graph) {
    e.graph->replay();
    return count(Ran::replayed);
  }
  if (!consecutive) e.eager_runs = 0;
  if (e.uncapturable || e.eager_runs < eager_steps_) {
    body();
    ++e.eager_runs;
    return count(Ran::eager);
  }
  e.graph = capturer.capture(body);
  if (!e.graph) {
    e.uncapturable = true;
    body();
    return count(Ran::eager);
  }
  e.graph->replay();  // the capture recorded the step's ops without running them
  return count(Ran::captured);
}

StepGraphs::Ran StepGraphs::count(Ran ran) {
  switch (ran) {
    case Ran::eager: ++counts_.eager; break;
    case Ran::captured: ++counts_.captured; break;
    case Ran::replayed: ++counts_.replayed; break;
  }
  return ran;
}

void StepGraphs::clear() {
  entries_.clear();
  last_key_ = nullptr;
}

std::size_t StepGraphs::graphs() const {
  std::size_t n = 0;
  for (const auto& [key, e] : entries_) n += e.graph != nullptr;
  return n;
}

}  // namespace tower::detail
