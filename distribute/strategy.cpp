#include "distribute/strategy.h"

#include <stdexcept>

namespace tower::distribute {

namespace {

class DefaultStrategyImpl final : public detail::StrategyImpl {
 public:
  std::string type() const override { return "DefaultStrategy"; }
  int num_replicas_in_sync() const override { return 1; }
  const std::vector<LogicalDevice>& devices() const override { return devices_; }
  std::unique_ptr<tower::detail::Replicas> replicate(ModelImpl&) override { return nullptr; }

 private:
  std::vector<LogicalDevice> devices_{{"cpu:0", Device::cpu()}};
};

const std::shared_ptr<detail::StrategyImpl>& default_strategy() {
  static const std::shared_ptr<detail::StrategyImpl> strategy = std::make_shared<DefaultStrategyImpl>();
  return strategy;
}

}  // namespace

StrategyScope::StrategyScope(std::shared_ptr<detail::StrategyImpl> strategy) {
  const tower::detail::DistributionPtr current = tower::detail::current_distribution();
  if (current && current != strategy) {
    const auto* other = dynamic_cast<const detail::StrategyImpl*>(current.get());
    throw std::logic_error("cannot enter the scope of a " + strategy->type() + " inside the scope of another " +
                           (other ? other->type() : std::string("strategy")) +
                           ": strategies do not mix; close the other scope first");
  }
  tower::detail::push_distribution(std::move(strategy));
  active_ = true;
}

StrategyScope::StrategyScope(StrategyScope&& other) noexcept : active_(other.active_) { other.active_ = false; }

StrategyScope::~StrategyScope() {
  if (active_) tower::detail::pop_distribution();
}

StrategyScope Strategy::scope() const { return StrategyScope(impl_); }

std::vector<std::string> Strategy::devices() const {
  std::vector<std::string> out;
  for (const LogicalDevice& d : impl_->devices()) out.push_back(d.name);
  return out;
}

Strategy get_strategy() {
  if (auto s = std::dynamic_pointer_cast<detail::StrategyImpl>(tower::detail::current_distribution()))
    return Strategy(s);
  return Strategy(default_strategy());
}

}  // namespace tower::distribute
