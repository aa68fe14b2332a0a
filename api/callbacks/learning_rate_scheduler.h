#pragma once
// LearningRateScheduler (Keras 3): at the beginning of every epoch, sets the optimizer's learning rate to
// schedule(epoch, current_rate), epoch being 0-based. The rate is set with Optimizer::set_learning_rate, so
// an optimizer schedule is replaced by a constant. At every epoch end the epoch's logs get "learning_rate", the
// rate of that epoch as the optimizer's float32 variable holds it (History too, as in Keras). Throws
// std::invalid_argument for an empty schedule, and std::runtime_error when the schedule returns a rate that is not
// finite.
#include <functional>

#include "api/training/callback.h"

namespace tower::callbacks {

class LearningRateScheduler : public Callback {
 public:
  using Schedule = std::function<double(int epoch, double lr)>;
  explicit LearningRateScheduler(Schedule schedule, int verbose = 0);

  void on_epoch_begin(int epoch, const Logs& logs) override;
  void add_epoch_logs(int epoch, Logs& logs) override;

 private:
  Schedule schedule_;
  int verbose_;
};

}  // namespace tower::callbacks
