#pragma once
// The callback registry behind YAML experiments: Keras' serialized form {"class_name": "EarlyStopping",
// "config": {...}} (or a bare class name) -> a callback, with Keras' argument names:
//
//   BackupAndRestore   backup_dir (required), save_freq, delete_checkpoint
//   CSVLogger          filename (required), separator, append
//   EarlyStopping      monitor, min_delta, patience, verbose, mode, baseline, restore_best_weights, start_from_epoch
//   EventLog           path (required), run, batch_events, flush_seconds
//   LiveMonitor        host, port, run, queue_size, flush_interval, reconnect_interval, close_timeout
//   ModelCheckpoint    filepath (required), monitor, verbose, save_best_only, save_weights_only, mode, save_freq,
//                      initial_value_threshold
//   ReduceLROnPlateau  monitor, factor, patience, verbose, mode, min_delta, cooldown, min_lr
//   TerminateOnNaN     (none)
//
// save_freq is "epoch" or a positive number of batches. LearningRateScheduler and LambdaCallback take C++
// functions and have no config form; asking for them says so.
//
// Throws ConfigError for an unknown class (listing the known ones and naming the closest), an unknown argument
// (naming the closest known one), a missing required argument, or a value of the wrong type (naming the
// argument); the callbacks' own checks (an unknown mode, a bad save_freq) throw std::invalid_argument.
#include <string>
#include <vector>

#include "api/training/callback.h"
#include "api/io/config.h"
#include "api/io/registry.h"

namespace tower::callbacks {

CallbackPtr callback_from_config(const Config& c);
// The class names callback_from_config knows.
std::vector<std::string> callback_types();
// The callback classes by Keras class name (io/registry.h).
Registry<CallbackPtr>& registry();

}  // namespace tower::callbacks
