#pragma once
// keras.utils.image_dataset_from_directory: a labelled image dataset from a folder with one sub-folder per
// class,
//
//   flowers/daisy/*.jpg, flowers/roses/*.png, ...   ->  class_names {"daisy", "roses", ...}, labels 0, 1, ...
//
// Images (.bmp, .gif, .jpeg, .jpg, .png, in sub-folders of a class folder too, ordered as Keras' sorted walk:
// a folder's own files by name, then its sub-folders' by path) are decoded with stb_image,
// converted to the colour mode, resized to image_size and yielded as float32 [height, width, channels]
// holding 0..255 (rescale in the model, as in Keras). Decoding runs lazily, on parallel threads, every pass.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/data/dataset.h"

namespace tower::data {

struct ImageDirectoryOptions {
  // Only "inferred": the label of an image is the index of its sub-folder in class_names.
  std::string labels = "inferred";
  // "int": int32 []; "categorical": float32 one-hot [num_classes]; "binary": float32 [1] (two classes only), so
  // that a batch of labels is [batch, 1] as Keras gives.
  std::string label_mode = "int";
  // The sub-folders to use, in label order; empty: all sub-folders, sorted by name.
  std::vector<std::string> class_names;
  // "rgb" (3 channels), "grayscale" (1) or "rgba" (4).
  std::string color_mode = "rgb";
  std::array<Index, 2> image_size = {256, 256};  // height, width
  // Elements are batches of this size; 0 yields single images.
  Index batch_size = 32;
  // Shuffles the file order once (before the split) and the elements every pass.
  bool shuffle = true;
  // Without one a seed is drawn from next_global_seed(); required with shuffle and validation_split, so
  // that the "training" and "validation" subsets of two calls do not overlap.
  std::optional<std::uint64_t> seed;
  // The fraction of files kept for validation: subset "training" gets the first 1 - validation_split of
  // the (shuffled) files, "validation" the rest.
  double validation_split = 0;
  std::string subset;
};

struct ImageDirectoryDataset {
  Dataset dataset;
  std::vector<std::string> class_names;
  std::vector<std::string> file_paths;  // the files of this subset, in (shuffled) file order
  std::vector<std::int32_t> labels;     // the label of each file in file_paths
};

// Throws std::invalid_argument for bad options and std::runtime_error naming the folder when it is missing,
// has no class sub-folders or no images. Iterating throws std::runtime_error naming the file and stb_image's
// reason for an image that cannot be decoded.
ImageDirectoryDataset image_dataset_from_directory(const std::string& directory, ImageDirectoryOptions options = {});

}  // namespace tower::data
