#pragma once
// The experiment schema (documented with examples in docs/experiments.md): the sections, their keys, the types of
// their values, and the defaults.
//
//   seed, name, description
//   data      source, directory, normalize, image_size, color_mode, class_names, shape, classes, train_examples,
//             test_examples, train / validation / test splits, preprocessing, shuffle_buffer, prefetch,
//             parallel_calls
//   model     one of: application (+ its options) | layers (+ input_shape) | nodes (+ outputs); name
//   compile   optimizer, loss, metrics, weighted_metrics, loss_weights
//   fit       epochs, batch_size_per_replica, steps_per_epoch, verbose, class_weight, validation
//   strategy  type (default | one_device | mirrored | multi_worker), device, devices, cross_device_ops,
//             communication
//   callbacks a list of {type: <Keras callback>, <its arguments>}
//   output    directory, epoch_weights, batch_events
//
// validate_experiment checks every key and type of these sections and writes the defaults into the document,
// so that the document is the resolved configuration. What goes to a registry (layer arguments, an application's
// options, optimizer / loss / metric / callback arguments) is checked where it is built (builders.h).
#include <string>
#include <vector>

#include "tools/experiment/document.h"

namespace tower::experiment {

// The data sources and their named splits.
const std::vector<std::string>& data_sources();
// Preprocessing step types, and which of them are random (applied per training batch).
const std::vector<std::string>& preprocessing_types();
bool is_random_preprocessing(const std::string& type);
const std::vector<std::string>& strategy_types();

// Throws ExperimentError at the first problem: an unknown key (with the closest known key), a wrong type (naming
// the key and the expected type), a missing required key, a value out of range or a combination that does not fit
// (e.g. image_size with source fashion_mnist). `default_name` names the run when the file has no `name`.
void validate_experiment(Document& doc, const std::string& default_name);

}  // namespace tower::experiment
