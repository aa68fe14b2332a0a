#pragma once
// The IDX format of MNIST and Fashion-MNIST, and their loaders.
//
// An IDX file is: two zero bytes, a type byte (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32,
// 0x0E float64), the number of dimensions, each dimension as a big-endian uint32, then the values big-endian
// and row-major. Files may be gzip-compressed; that is detected from the content, not the name.
#include <string>

#include "api/core/tensor.h"
#include "api/data/dataset.h"

namespace tower::data {

namespace idx {

// Reads an IDX file into a CPU tensor: uint8 stays uint8, int8/int16/int32 become int32, float32/float64
// become float32. Throws std::runtime_error naming the path for a missing or unreadable file, a corrupt
// gzip stream, a wrong magic number, an unknown type byte, or a file shorter than its header announces
// (with the expected and actual byte counts).
Tensor read(const std::string& path);

}  // namespace idx

// Options of mnist::load and fashion_mnist::load.
struct LoadOptions {
  // Folder holding train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
  // t10k-labels-idx1-ubyte, each plain or with a .gz suffix. Empty: Fashion-MNIST uses
  // /usr/share/datasets/fashion-mnist (Debian's dataset-fashion-mnist); MNIST has no default.
  std::string directory;
  // true: images scaled to [0, 1]; false: the raw 0..255 values, still float32.
  bool normalize = true;
};

// The raw arrays of keras.datasets.*.load_data(): x uint8 [N, H, W] (CIFAR-10: [N, 32, 32, 3]),
// y uint8 [N].
struct RawData {
  Tensor x_train, y_train, x_test, y_test;
};

namespace mnist {
// split "train" (60000 images) or "test" (10000). Elements {image float32 [28, 28, 1], label int32 []}.
// Throws std::invalid_argument for an unknown split or an empty options.directory, std::runtime_error for
// missing or corrupt files and for image and label files of different lengths.
Dataset load(const std::string& split, LoadOptions options = {});
RawData load_data(const std::string& directory);
}  // namespace mnist

namespace fashion_mnist {
inline const std::string default_directory = "/usr/share/datasets/fashion-mnist";
// As mnist::load; a missing file's error names the Debian package dataset-fashion-mnist.
Dataset load(const std::string& split, LoadOptions options = {});
RawData load_data(const std::string& directory = default_directory);
}  // namespace fashion_mnist

}  // namespace tower::data
