#pragma once
// Image decoding and resizing for the image loaders.
#include <string>

#include "api/core/tensor.h"

namespace tower::data {

// The largest image decode_image accepts, in pixels (e.g. 8192 x 4096, or 5792 x 5792): a damaged header must
// not make it allocate gigabytes. Decoded as float32, an RGBA image of this size takes 512 MiB.
inline constexpr Index kMaxImagePixels = Index{1} << 25;

// Decodes a PNG, JPEG, BMP or GIF (its first frame) file with stb_image into float32 [height, width, channels]
// holding 0..255. channels: 1 (grayscale), 3 (RGB) or 4 (RGBA); other channel layouts are converted as stb_image
// does. The format is recognised by the file's first bytes, not its name; other formats (which stb_image would
// also try) are refused. Throws std::invalid_argument for other channel counts and std::runtime_error naming the
// path for a missing, unreadable, empty, other-format or undecodable file (with stb_image's reason), and for one
// whose header announces more than kMaxImagePixels pixels (before anything is decoded).
Tensor decode_image(const std::string& path, int channels);

// Bilinear resize of a float32 [height, width, channels] image, as tf.image.resize(method="bilinear") with
// half-pixel centres and no antialiasing. Returns the input itself when the size already matches.
// Requires height, width >= 1; throws std::invalid_argument otherwise or for another rank or dtype.
Tensor resize_bilinear(const Tensor& image, Index height, Index width);

}  // namespace tower::data
