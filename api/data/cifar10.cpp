#include "api/data/cifar10.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <tuple>

#include "api/data/detail/convert.h"

namespace tower::data::cifar10 {
namespace {

constexpr Index kSide = 32;
constexpr Index kChannels = 3;
constexpr std::size_t kImageBytes = kSide * kSide * kChannels;
constexpr std::size_t kRecordBytes = 1 + kImageBytes;

std::vector<std::uint8_t> read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error("CIFAR-10 file not found: " + path.string() +
                             " (expected the binary version: data_batch_1.bin ... data_batch_5.bin, test_batch.bin)");
  std::ifstream in(path, std::ios::binary);
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("cannot read CIFAR-10 file " + path.string());
  return bytes;
}

std::filesystem::path batches_directory(const std::string& directory) {
  const std::filesystem::path nested = std::filesystem::path(directory) / "cifar-10-batches-bin";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(directory) / "test_batch.bin", ec) &&
      std::filesystem::is_directory(nested, ec))
    return nested;
  return directory;
}

std::vector<std::filesystem::path> split_files(const std::string& directory, const std::string& split) {
  const std::filesystem::path dir = batches_directory(directory);
  if (split == "test") return {dir / "test_batch.bin"};
  if (split != "train") throw std::invalid_argument("CIFAR-10 has no split '" + split + "': use \"train\" or \"test\"");
  std::vector<std::filesystem::path> files;
  for (int i = 1; i <= 5; ++i) files.push_back(dir / ("data_batch_" + std::to_string(i) + ".bin"));
  return files;
}

// Images uint8 [N, 32, 32, 3] (channels-last) and labels uint8 [N] of the given batch files.
std::pair<Tensor, Tensor> read_batches(const std::vector<std::filesystem::path>& files) {
  std::vector<std::vector<std::uint8_t>> contents;
  Index records = 0;
  for (const auto& path : files) {
    contents.push_back(read_file(path));
    const std::size_t size = contents.back().size();
    if (size == 0 || size % kRecordBytes != 0)
      throw std::runtime_error("truncated CIFAR-10 batch " + path.string() + ": it has " + std::to_string(size) +
                               " bytes, expected a whole number of " + std::to_string(kRecordBytes) +
                               "-byte records (" + std::to_string(size / kRecordBytes) + " complete, then " +
                               std::to_string(size % kRecordBytes) + " bytes)");
    records += static_cast<Index>(size / kRecordBytes);
  }
  Tensor x(Shape{records, kSide, kSide, kChannels}, DType::uint8);
  Tensor y(Shape{records}, DType::uint8);
  std::uint8_t* image = x.data<std::uint8_t>();
  std::uint8_t* label = y.data<std::uint8_t>();
  for (std::size_t f = 0; f < files.size(); ++f) {
    const std::vector<std::uint8_t>& bytes = contents[f];
    for (std::size_t r = 0; r * kRecordBytes < bytes.size(); ++r) {
      const std::uint8_t* record = bytes.data() + r * kRecordBytes;
      if (record[0] > 9)
        throw std::runtime_error("CIFAR-10 batch " + files[f].string() + ": record " + std::to_string(r) +
                                 " has label " + std::to_string(record[0]) + ", expected 0..9");
      *label++ = record[0];
      const std::uint8_t* planes = record + 1;  // CHW
      for (Index p = 0; p < kSide * kSide; ++p)
        for (Index c = 0; c < kChannels; ++c) *image++ = planes[c * kSide * kSide + p];
    }
  }
  return {x, y};
}

}  // namespace

const std::vector<std::string>& class_names() {
  static const std::vector<std::string> names = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                 "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

Dataset load(const std::string& directory, const std::string& split, bool normalize) {
  auto [x, y] = read_batches(split_files(directory, split));
  return Dataset::from_tensor_slices(
      {detail::uint8_to_float(x, x.shape(), normalize ? 1.f / 255.f : 1.f), detail::uint8_to_int32(y)});
}

RawData load_data(const std::string& directory) {
  RawData data;
  std::tie(data.x_train, data.y_train) = read_batches(split_files(directory, "train"));
  std::tie(data.x_test, data.y_test) = read_batches(split_files(directory, "test"));
  return data;
}

}  // namespace tower::data::cifar10
