#include "api/data/image.h"

#include <stb/stb_image.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <vector>

namespace tower::data {

Tensor decode_image(const std::string& path, int channels) {
  if (channels != 1 && channels != 3 && channels != 4)
    throw std::invalid_argument("decode_image: channels must be 1, 3 or 4, got " + std::to_string(channels));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw std::runtime_error("image file not found: " + path);
  std::ifstream in(path, std::ios::binary);
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("cannot read image file " + path);
  if (bytes.empty()) throw std::runtime_error("cannot decode image " + path + ": the file is empty");

  int width = 0, height = 0, file_channels = 0;
  std::unique_ptr<unsigned char, void (*)(void*)> pixels(
      stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &width, &height, &file_channels, channels),
      stbi_image_free);
  if (!pixels) {
    const char* reason = stbi_failure_reason();
    throw std::runtime_error("cannot decode image " + path + ": " + (reason ? reason : "unknown error") +
                             " (stb_image reads PNG, JPEG, BMP, GIF, TGA, PSD, HDR, PIC and PNM)");
  }
  Tensor out(Shape{height, width, channels}, DType::float32);
  float* dst = out.data<float>();
  const unsigned char* src = pixels.get();
  for (Index i = 0, n = out.numel(); i < n; ++i) dst[i] = src[i];
  return out;
}

namespace {

// For each output coordinate: the two input coordinates and the weight of the second.
struct Taps {
  std::vector<Index> low, high;
  std::vector<float> frac;
};

Taps taps(Index in, Index out) {
  Taps t;
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  for (Index o = 0; o < out; ++o) {
    const double x = (static_cast<double>(o) + 0.5) * scale - 0.5;
    const double x0 = std::floor(x);
    t.low.push_back(std::clamp<Index>(static_cast<Index>(x0), 0, in - 1));
    t.high.push_back(std::clamp<Index>(static_cast<Index>(x0) + 1, 0, in - 1));
    t.frac.push_back(static_cast<float>(x - x0));
  }
  return t;
}

}  // namespace

Tensor resize_bilinear(const Tensor& image, Index height, Index width) {
  if (image.rank() != 3 || image.dtype() != DType::float32)
    throw std::invalid_argument("resize_bilinear: expected a float32 [height, width, channels] image, got " +
                                image.shape().to_string() + " " + dtype_name(image.dtype()));
  if (height < 1 || width < 1)
    throw std::invalid_argument("resize_bilinear: target size " + std::to_string(height) + "x" +
                                std::to_string(width) + " must be at least 1x1");
  const Index in_h = image.dim(0), in_w = image.dim(1), c = image.dim(2);
  if (in_h == height && in_w == width) return image;
  if (in_h == 0 || in_w == 0)
    throw std::invalid_argument("resize_bilinear: cannot resize an empty image of shape " + image.shape().to_string());
  const Taps ys = taps(in_h, height), xs = taps(in_w, width);
  Tensor out(Shape{height, width, c}, DType::float32);
  const float* src = image.data<float>();
  float* dst = out.data<float>();
  for (Index y = 0; y < height; ++y) {
    const float* top = src + ys.low[y] * in_w * c;
    const float* bottom = src + ys.high[y] * in_w * c;
    const float fy = ys.frac[y];
    for (Index x = 0; x < width; ++x) {
      const Index l = xs.low[x] * c, h = xs.high[x] * c;
      const float fx = xs.frac[x];
      for (Index k = 0; k < c; ++k) {
        const float t = top[l + k] + (top[h + k] - top[l + k]) * fx;
        const float b = bottom[l + k] + (bottom[h + k] - bottom[l + k]) * fx;
        *dst++ = t + (b - t) * fy;
      }
    }
  }
  return out;
}

}  // namespace tower::data
