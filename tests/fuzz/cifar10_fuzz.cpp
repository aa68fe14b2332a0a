// data::cifar10::load and load_data on any bytes as test_batch.bin (load_data also needs the five training
// batches: the same bytes serve as data_batch_1.bin ... data_batch_5.bin).
#include <filesystem>

#include "api/data/cifar10.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tower;
  const std::filesystem::path dir = fuzz::scratch_dir() / "cifar-10-batches-bin";
  std::filesystem::create_directories(dir);
  const std::string test = fuzz::write_input("cifar-10-batches-bin/test_batch.bin", data, size);
  fuzz::expect_clear_error([&] {
    data::Dataset ds = data::cifar10::load(fuzz::scratch_dir().string(), "test", size % 2 == 0);
    for (const auto& element : ds) (void)element;
  });
  for (int i = 1; i <= 5; ++i)
    fuzz::write_input("cifar-10-batches-bin/data_batch_" + std::to_string(i) + ".bin", data, size);
  fuzz::expect_clear_error([&] { data::cifar10::load_data(fuzz::scratch_dir().string()); });
  return 0;
}
