#include "api/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <vector>

#include "api/data/detail/convert.h"

namespace tower::data {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

// Reads up to `bytes` bytes; returns how many were read. zlib reads plain files as they are.
std::size_t read_bytes(gzFile file, void* dst, std::size_t bytes, std::string& error) {
  std::size_t done = 0;
  while (done < bytes) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(bytes - done, 1u << 30));
    const int n = gzread(file, static_cast<char*>(dst) + done, chunk);
    if (n <= 0) {
      int code = Z_OK;
      const char* message = gzerror(file, &code);
      if (code != Z_OK && code != Z_STREAM_END) error = message;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  return done;
}

std::uint32_t big_endian_u32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

struct IdxType {
  int bytes;
  DType dtype;
  const char* name;
};

IdxType idx_type(unsigned char code, const std::string& path) {
  switch (code) {
    case 0x08: return {1, DType::uint8, "uint8"};
    case 0x09: return {1, DType::int32, "int8"};
    case 0x0B: return {2, DType::int32, "int16"};
    case 0x0C: return {4, DType::int32, "int32"};
    case 0x0D: return {4, DType::float32, "float32"};
    case 0x0E: return {8, DType::float32, "float64"};
  }
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", code);
  throw std::runtime_error("IDX file " + path + ": unknown type byte " + hex +
                           " (expected 0x08, 0x09, 0x0b, 0x0c, 0x0d or 0x0e)");
}

// Big-endian values of `type` to the tensor's dtype.
void convert(const unsigned char* src, const IdxType& type, Tensor& out) {
  const Index n = out.numel();
  for (Index i = 0; i < n; ++i, src += type.bytes) {
    std::uint64_t v = 0;
    for (int b = 0; b < type.bytes; ++b) v = (v << 8) | src[b];
    switch (type.bytes) {
      case 1: out.data<std::int32_t>()[i] = static_cast<std::int8_t>(v); break;
      case 2: out.data<std::int32_t>()[i] = static_cast<std::int16_t>(v); break;
      case 4:
        if (out.dtype() == DType::int32) {
          out.data<std::int32_t>()[i] = static_cast<std::int32_t>(v);
        } else {
          const std::uint32_t bits = static_cast<std::uint32_t>(v);
          std::memcpy(out.data<float>() + i, &bits, 4);
        }
        break;
      case 8: {
        double d;
        std::memcpy(&d, &v, 8);
        out.data<float>()[i] = static_cast<float>(d);
        break;
      }
    }
  }
}

std::string truncated(const std::string& path, const std::string& what, std::size_t expected, std::size_t actual,
                      const std::string& zlib_error) {
  return "truncated IDX file " + path + ": " + what + " needs " + std::to_string(expected) + " bytes but only " +
         std::to_string(actual) + " could be read" + (zlib_error.empty() ? "" : " (gzip: " + zlib_error + ")");
}

// Deflate expands at most 1032-fold, so a gzip file of n bytes holds at most 1032 n bytes of data.
constexpr std::uintmax_t kMaxGzipRatio = 1032;

// Throws, as a truncated file, when `expected` data bytes after `header_bytes` cannot be in the file: for a
// plain file its size says so; a gzip file can hold at most kMaxGzipRatio times its own size.
void check_data_fits(gzFile file, const std::string& path, const std::string& what, std::size_t expected,
                     std::size_t header_bytes) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return;  // the reads below report what they find
  if (gzdirect(file)) {
    const std::uintmax_t available = size > header_bytes ? size - header_bytes : 0;
    if (expected > available) throw std::runtime_error(truncated(path, what, expected, available, ""));
  } else if (expected / kMaxGzipRatio > size) {
    throw std::runtime_error("truncated IDX file " + path + ": " + what + " needs " + std::to_string(expected) +
                             " bytes, more than a gzip file of " + std::to_string(size) + " bytes can hold");
  }
}

}  // namespace

Tensor idx::read(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error("IDX file not found: " + path);
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) throw std::runtime_error("cannot open IDX file " + path + ": " + std::strerror(errno));
  gzbuffer(file.get(), 1 << 18);

  std::string zlib_error;
  unsigned char magic[4];
  std::size_t got = read_bytes(file.get(), magic, 4, zlib_error);
  if (got < 4) throw std::runtime_error(truncated(path, "the magic number", 4, got, zlib_error));
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%02x %02x %02x %02x", magic[0], magic[1], magic[2], magic[3]);
    throw std::runtime_error("not an IDX file: " + path + " starts with bytes " + hex +
                             ", expected 00 00 <type> <number of dimensions>");
  }
  const IdxType type = idx_type(magic[2], path);

  const int rank = magic[3];
  std::vector<unsigned char> header(4 * static_cast<std::size_t>(rank));
  got = read_bytes(file.get(), header.data(), header.size(), zlib_error);
  if (got < header.size())
    throw std::runtime_error(truncated(path, "the header of " + std::to_string(rank) + " dimensions", header.size(),
                                       got, zlib_error));
  std::vector<Index> dims;
  for (int d = 0; d < rank; ++d) dims.push_back(big_endian_u32(&header[4 * d]));
  Shape shape(std::move(dims));
  const std::string what = "data of shape " + shape.to_string() + " " + type.name;
  // The header's dimensions are checked against the file before anything is allocated for them.
  std::size_t expected = type.bytes;
  for (Index d : shape)
    if (__builtin_mul_overflow(expected, static_cast<std::size_t>(d), &expected))
      throw std::runtime_error("IDX file " + path + ": the dimensions in the header, " + shape.to_string() +
                               ", hold more values than any file can");
  check_data_fits(file.get(), path, what, expected, 4 + header.size());

  Tensor out(shape, type.dtype);
  if (type.dtype == DType::uint8) {
    got = read_bytes(file.get(), out.raw_data(), expected, zlib_error);
    if (got < expected) throw std::runtime_error(truncated(path, what, expected, got, zlib_error));
  } else {
    std::vector<unsigned char> raw(expected);
    got = read_bytes(file.get(), raw.data(), expected, zlib_error);
    if (got < expected) throw std::runtime_error(truncated(path, what, expected, got, zlib_error));
    convert(raw.data(), type, out);
  }
  return out;
}

namespace {

struct IdxDataset {
  std::string name;          // for messages: "MNIST", "Fashion-MNIST"
  std::string missing_hint;  // appended to a missing-file error
};

// <directory>/<stem>.gz, else <directory>/<stem>.
std::string find_file(const std::string& directory, const std::string& stem, const IdxDataset& set) {
  const std::filesystem::path base = std::filesystem::path(directory) / stem;
  std::error_code ec;
  for (const std::string& candidate : {base.string() + ".gz", base.string()})
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  throw std::runtime_error(set.name + " file not found: " + base.string() + ".gz (nor " + base.string() + ")" +
                           set.missing_hint);
}

bool is_train(const std::string& split, const std::string& name) {
  if (split == "train") return true;
  if (split == "test") return false;
  throw std::invalid_argument(name + " has no split '" + split + "': use \"train\" or \"test\"");
}

// x uint8 [N, H, W] and y uint8 [N] of one split, checked against each other.
std::pair<Tensor, Tensor> read_split(const std::string& directory, bool train, const IdxDataset& set) {
  const std::string prefix = train ? "train" : "t10k";
  const std::string images_path = find_file(directory, prefix + "-images-idx3-ubyte", set);
  const std::string labels_path = find_file(directory, prefix + "-labels-idx1-ubyte", set);
  Tensor x = idx::read(images_path);
  Tensor y = idx::read(labels_path);
  if (x.dtype() != DType::uint8 || x.rank() != 3)
    throw std::runtime_error(set.name + " images file " + images_path + " holds " + x.shape().to_string() + " " +
                             dtype_name(x.dtype()) + ", expected uint8 images [N, height, width]");
  if (y.dtype() != DType::uint8 || y.rank() != 1)
    throw std::runtime_error(set.name + " labels file " + labels_path + " holds " + y.shape().to_string() + " " +
                             dtype_name(y.dtype()) + ", expected uint8 labels [N]");
  if (x.dim(0) != y.dim(0))
    throw std::runtime_error(set.name + ": " + images_path + " holds " + std::to_string(x.dim(0)) + " images but " +
                             labels_path + " holds " + std::to_string(y.dim(0)) + " labels");
  return {x, y};
}

Dataset to_dataset(const Tensor& x, const Tensor& y, bool normalize) {
  return Dataset::from_tensor_slices({detail::uint8_to_float(x, Shape{x.dim(0), x.dim(1), x.dim(2), 1},
                                                             normalize ? 1.f / 255.f : 1.f),
                                      detail::uint8_to_int32(y)});
}

RawData load_raw(const std::string& directory, const IdxDataset& set) {
  RawData data;
  std::tie(data.x_train, data.y_train) = read_split(directory, true, set);
  std::tie(data.x_test, data.y_test) = read_split(directory, false, set);
  return data;
}

const IdxDataset& mnist_set() {
  static const IdxDataset set{"MNIST", ""};
  return set;
}

const IdxDataset& fashion_set() {
  static const IdxDataset set{"Fashion-MNIST",
                              "; Debian's package dataset-fashion-mnist provides it in " +
                                  fashion_mnist::default_directory +
                                  " (apt install dataset-fashion-mnist), or set LoadOptions::directory"};
  return set;
}

std::string mnist_directory(const std::string& directory) {
  if (directory.empty())
    throw std::invalid_argument(
        "mnist: no directory given; MNIST has no installed default, so set LoadOptions::directory to a folder "
        "holding train-images-idx3-ubyte(.gz), train-labels-idx1-ubyte(.gz), t10k-images-idx3-ubyte(.gz) and "
        "t10k-labels-idx1-ubyte(.gz)");
  return directory;
}

}  // namespace

Dataset mnist::load(const std::string& split, LoadOptions options) {
  const bool train = is_train(split, "MNIST");
  auto [x, y] = read_split(mnist_directory(options.directory), train, mnist_set());
  return to_dataset(x, y, options.normalize);
}

RawData mnist::load_data(const std::string& directory) { return load_raw(mnist_directory(directory), mnist_set()); }

Dataset fashion_mnist::load(const std::string& split, LoadOptions options) {
  const bool train = is_train(split, "Fashion-MNIST");
  const std::string directory = options.directory.empty() ? default_directory : options.directory;
  auto [x, y] = read_split(directory, train, fashion_set());
  return to_dataset(x, y, options.normalize);
}

RawData fashion_mnist::load_data(const std::string& directory) {
  return load_raw(directory.empty() ? default_directory : directory, fashion_set());
}

}  // namespace tower::data
