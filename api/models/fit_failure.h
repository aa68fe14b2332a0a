#pragma once
// What a strategy of several worker processes does when fit fails on one of them. A Distribution
// (distribution.h) that also derives from FitFailureHandler is told by fit (training_loop.cpp) when an exception
// leaves fit, before the exception goes on: the other workers would otherwise wait for this one in a collective
// until their timeout.
#include <string>

namespace tower::detail {

class FitFailureHandler {
 public:
  virtual ~FitFailureHandler() = default;
  // An exception whose what() is `message` is leaving fit on this worker. Ends every worker at once (this one
  // included), or returns and lets the exception go on.
  virtual void fit_failed(const std::string& message) = 0;
};

}  // namespace tower::detail
