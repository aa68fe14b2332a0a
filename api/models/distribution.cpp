#include "api/models/distribution.h"

#include <stdexcept>

namespace tower::detail {

namespace {
std::vector<DistributionPtr>& scope_stack() {
  thread_local std::vector<DistributionPtr> stack;
  return stack;
}
}  // namespace

DistributionPtr current_distribution() {
  const auto& stack = scope_stack();
  return stack.empty() ? nullptr : stack.back();
}

void push_distribution(DistributionPtr distribution) { scope_stack().push_back(std::move(distribution)); }

void pop_distribution() {
  auto& stack = scope_stack();
  if (stack.empty()) throw std::logic_error("pop_distribution: no strategy scope is active on this thread");
  stack.pop_back();
}

}  // namespace tower::detail
