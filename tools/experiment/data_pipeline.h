#pragma once
// Builds an experiment's `data` section: the source, its train / validation / test splits, preprocessing,
// shuffling, batching and prefetching.
//
// Sources (elements {image float32 [H, W, C], label int32 []}):
//   fashion_mnist, mnist  IDX files (plain or .gz) in `directory`; splits train (60000) and test (10000)
//   cifar10               the binary version's .bin files in `directory`; splits train (50000) and test (10000)
//   image_directory       one sub-folder per class (keras.utils.image_dataset_from_directory); a split names a
//                         folder under `directory` ("." is the directory itself)
//   synthetic             generated images: each class a fixed random pattern plus noise, from the seed; splits
//                         train (train_examples) and test (test_examples)
// Images hold [0, 1] with normalize (the default), else 0..255.
//
// A split is {split: <name>, take: n}; validation may instead be {fraction: f}: the last f of the training
// split, taken before shuffling (Keras' validation_split); `take` keeps the first n examples of a split.
#include <optional>
#include <string>
#include <vector>

#include "api/data/dataset.h"
#include "tools/experiment/experiment.h"
#include "tools/experiment/preprocessing.h"
#include "tools/experiment/train_data.h"

namespace tower::experiment {

struct DataPipeline {
  std::shared_ptr<TrainData> train;         // null without with_train
  std::optional<data::Dataset> validation;  // batched, preprocessed (evaluation form), prefetched
  std::optional<data::Dataset> test;
  Shape example_shape;                      // one preprocessed image
  std::vector<std::string> class_names;     // label i is class_names[i]
};

// Throws ExperimentError at data.directory (or data.source) when a file or folder the splits need is missing,
// naming the path and the package or step that provides it. Reads no data.
void check_data_files(const Experiment& experiment);
// One preprocessed example's shape, from the source and the preprocessing steps alone (no data read; an
// image_directory's channel count comes from color_mode).
Shape example_shape(const Experiment& experiment);
// The class names known without reading data (empty for an image_directory without class_names).
std::vector<std::string> known_class_names(const Experiment& experiment);

// Checks the files, then builds the pipelines. The training batch is `batch_size` (global: per replica times
// replicas); validation and test batches are fit.validation.batch_size, else the same. Draws exactly one seed
// from the global generator (the training shuffle), unless shuffle_buffer is 0. Without `with_train` the training
// pipeline is left out (evaluation only) and nothing is drawn.
DataPipeline build_data(const Experiment& experiment, Index batch_size, bool with_train = true);

// An evaluation pipeline for other examples (predict): per-image steps in their evaluation form, batched.
data::Dataset evaluation_pipeline(const Experiment& experiment, const data::Dataset& examples, Index batch_size);

}  // namespace tower::experiment
