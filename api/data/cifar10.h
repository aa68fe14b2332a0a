#pragma once
// CIFAR-10 from its binary version (cifar-10-binary.tar.gz): data_batch_1.bin ... data_batch_5.bin (train,
// 50000 images) and test_batch.bin (10000). Each record is one label byte followed by 3072 bytes of a 32x32
// image, channel-major (all red, then green, then blue); images come out channels-last.
#include <string>
#include <vector>

#include "api/data/dataset.h"
#include "api/data/idx.h"

namespace tower::data::cifar10 {

// The names of labels 0..9: airplane, automobile, bird, cat, deer, dog, frog, horse, ship, truck.
const std::vector<std::string>& class_names();

// `directory` holds the .bin files, directly or in its sub-folder cifar-10-batches-bin (the archive's layout).
// split "train" or "test". Elements {image float32 [32, 32, 3], label int32 []}; normalize scales images
// to [0, 1], otherwise they keep 0..255. Throws std::invalid_argument for an unknown split and
// std::runtime_error naming the file for a missing file, a size that is not a whole number of records,
// or a label outside 0..9.
Dataset load(const std::string& directory, const std::string& split, bool normalize = true);
// keras.datasets.cifar10.load_data(): x uint8 [N, 32, 32, 3], y uint8 [N] (Keras' y is [N, 1]).
RawData load_data(const std::string& directory);

}  // namespace tower::data::cifar10
