#include "api/data/image.h"

#include <stb/stb_image.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <vector>

namespace tower::data {

namespace {

// Whether the bytes start as one of the four formats decode_image reads, as stb_image tests them. Only those reach
// stb_image: its other decoders (TGA, PSD, HDR, PIC, PNM) are outside Tower's contract, and fuzzing found
// Debian's 2.27 reading past a heap buffer in one of them (16-bit PNM).
bool is_png_jpeg_bmp_or_gif(const std::vector<unsigned char>& b) {
  const auto starts_with = [&](const char* magic, std::size_t n) {
    return b.size() >= n && std::equal(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n),
                                       reinterpret_cast<const unsigned char*>(magic));
  };
  std::size_t fill = 1;  // JPEG: 0xFF, any number of fill bytes 0xFF, then SOI (0xD8)
  while (fill < b.size() && b[fill] == 0xFF) ++fill;
  return starts_with("\x89PNG\r\n\x1a\n", 8) || (b[0] == 0xFF && fill < b.size() && b[fill] == 0xD8) ||
         starts_with("BM", 2) || starts_with("GIF87a", 6) || starts_with("GIF89a", 6);
}

// Debian's stb_image (2.27) trusts the code counts of a JPEG DHT segment: a Huffman table of more than 256 codes
// overflows its 256-entry arrays on the heap (found by tests/fuzz; later stb_image releases check it). Every DHT
// segment stb_image could reach is checked here first, read as stb_image reads it: tables while the segment's
// length lasts, each a class/id byte, 16 counts, then the codes. Returns the largest table's code count.
int largest_jpeg_huffman_table(const std::vector<unsigned char>& b) {
  const std::size_t n = b.size();
  int largest = 0;
  // A JPEG to stb_image: 0xFF, any number of fill bytes 0xFF, then SOI (0xD8).
  std::size_t i = 1;
  while (i < n && b[i] == 0xFF) ++i;
  if (n == 0 || b[0] != 0xFF || i >= n || b[i] != 0xD8) return largest;
  ++i;
  while (i + 3 < n) {
    // Segments follow each other; entropy-coded data after a scan is searched for the next marker.
    if (b[i] != 0xFF || b[i + 1] == 0xFF) {
      ++i;
      continue;
    }
    const unsigned char marker = b[i + 1];
    i += 2;
    if (marker == 0xD9) break;  // EOI: stb_image stops
    if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;  // no length
    const std::size_t length = (std::size_t{b[i]} << 8) | b[i + 1];
    if (marker == 0xC4) {
      std::size_t table = i + 2;
      for (long left = static_cast<long>(length) - 2; left > 0 && table < n;) {
        int codes = 0;
        for (std::size_t k = table + 1; k <= table + 16 && k < n; ++k) codes += b[k];
        largest = std::max(largest, codes);
        table += 17 + static_cast<std::size_t>(codes);
        left -= 17 + codes;
      }
    }
    i += length;
  }
  return largest;
}

}  // namespace

Tensor decode_image(const std::string& path, int channels) {
  if (channels != 1 && channels != 3 && channels != 4)
    throw std::invalid_argument("decode_image: channels must be 1, 3 or 4, got " + std::to_string(channels));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw std::runtime_error("image file not found: " + path);
  std::ifstream in(path, std::ios::binary);
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("cannot read image file " + path);
  if (bytes.empty()) throw std::runtime_error("cannot decode image " + path + ": the file is empty");

  if (!is_png_jpeg_bmp_or_gif(bytes)) {
    std::string start;
    for (std::size_t i = 0; i < std::min<std::size_t>(bytes.size(), 4); ++i) {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%s%02x", i ? " " : "", bytes[i]);
      start += hex;
    }
    throw std::runtime_error("cannot decode image " + path + ": not a PNG, JPEG, BMP or GIF file (it starts with " +
                             start + ")");
  }
  if (const int codes = largest_jpeg_huffman_table(bytes); codes > 256)
    throw std::runtime_error("cannot decode image " + path + ": a JPEG Huffman table (DHT) holds " +
                             std::to_string(codes) + " codes, more than 256 (a damaged file)");
  int width = 0, height = 0, file_channels = 0;
  if (stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &width, &height, &file_channels) &&
      static_cast<Index>(width) * height > kMaxImagePixels)
    throw std::runtime_error("cannot decode image " + path + ": its header says " + std::to_string(width) + "x" +
                             std::to_string(height) + " pixels, more than the " + std::to_string(kMaxImagePixels) +
                             " decode_image accepts (a damaged file, or an image to shrink first)");
  std::unique_ptr<unsigned char, void (*)(void*)> pixels(
      stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &width, &height, &file_channels, channels),
      stbi_image_free);
  if (!pixels) {
    const char* reason = stbi_failure_reason();
    throw std::runtime_error("cannot decode image " + path + ": " + (reason ? reason : "unknown error") +
                             " (decode_image reads PNG, JPEG, BMP and GIF)");
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
