#include "api/callbacks/learning_rate_scheduler.h"

#include <cmath>
#include <iostream>
#include <stdexcept>
#include <string>

#include "api/callbacks/reduce_lr_on_plateau.h"
#include "api/models/model.h"

namespace tower::callbacks {

LearningRateScheduler::LearningRateScheduler(Schedule schedule, int verbose)
    : schedule_(std::move(schedule)), verbose_(verbose) {
  if (!schedule_) throw std::invalid_argument("LearningRateScheduler: the schedule is empty");
}

void LearningRateScheduler::on_epoch_begin(int epoch, const Logs&) {
  optimizers::Optimizer& optimizer = *model()->optimizer();
  const double lr = schedule_(epoch, optimizer.learning_rate());
  if (!std::isfinite(lr))
    throw std::runtime_error("LearningRateScheduler: the schedule returned " + std::to_string(lr) + " for epoch " +
                             std::to_string(epoch));
  optimizer.set_learning_rate(lr);
  if (verbose_ > 0)
    std::cout << "\nEpoch " << epoch + 1 << ": LearningRateScheduler setting learning rate to " << lr << ".\n";
}

void LearningRateScheduler::add_epoch_logs(int, Logs& logs) { detail::log_learning_rate(*model(), logs); }

}  // namespace tower::callbacks
