#pragma once
// TerminateOnNaN (Keras 3): after a training batch whose running "loss" is NaN or infinite, prints
// "Batch N: Invalid loss, terminating training" (N 0-based) and sets model()->stop_training.
#include <cstdint>
#include <iosfwd>

#include "api/training/callback.h"

namespace tower::callbacks {

class TerminateOnNaN : public Callback {
 public:
  // out: where the message goes; nullptr means std::cout.
  explicit TerminateOnNaN(std::ostream* out = nullptr) : out_(out) {}

  void on_train_batch_end(std::int64_t batch, const Logs& logs) override;

 private:
  std::ostream* out_;
};

}  // namespace tower::callbacks
