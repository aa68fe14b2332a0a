#pragma once
// The pieces of a resumable training state that `tower train`'s checkpoint (tools/experiment/run_checkpoint.h)
// and BackupAndRestore both save and restore, beyond weights and optimizer slots: the training plans' random
// states (seed and steps) and the callbacks' own states, each to and from the extra config and named tensors of a Tower
// weights file (io/weights_file.h).
#include <string>
#include <vector>

#include "api/io/config.h"
#include "api/io/weights_file.h"
#include "api/training/callback.h"
#include "api/training/training_loop.h"

namespace tower::detail {

Config plan_rngs_to_config(const std::vector<TrainingLoop::PlanRng>& rngs);
// Throws ConfigError for a malformed list.
std::vector<TrainingLoop::PlanRng> plan_rngs_from_config(const Config& list);

// The states of the callbacks that remember something (Callback::state), by their position in `callbacks`: a list
// of {"index", "values"}, and their tensors appended to `tensors` as "<prefix><index>/<name>". `self` (the
// callback saving) is left out.
Config callback_states(const std::vector<callbacks::CallbackPtr>& callbacks, const callbacks::Callback* self,
                       const std::string& prefix, std::vector<io::NamedTensor>& tensors);
// Gives each callback its state back from what callback_states wrote (`tensors`: the file's entries under
// `prefix`). Throws std::runtime_error starting with `file` when the states do not fit `callbacks`.
void restore_callback_states(const Config& list, const std::vector<io::NamedTensor>& tensors, const std::string& prefix,
                             const std::vector<callbacks::CallbackPtr>& callbacks, const std::string& file);

}  // namespace tower::detail
