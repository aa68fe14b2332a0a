#include "api/callbacks/terminate_on_nan.h"

#include <cmath>
#include <iostream>

#include "api/models/model.h"

namespace tower::callbacks {

void TerminateOnNaN::on_train_batch_end(std::int64_t batch, const Logs& logs) {
  const std::optional<double> loss = logs.get("loss");
  if (!loss || std::isfinite(*loss)) return;
  (out_ ? *out_ : std::cout) << "Batch " << batch << ": Invalid loss, terminating training\n" << std::flush;
  model()->stop_training = true;
}

}  // namespace tower::callbacks
