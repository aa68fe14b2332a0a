// Tower weights files (io::read_weights_file) on any bytes, and on the same bytes with their CRC-32 trailer
// recomputed, so mutations reach the header and data checks behind the checksum. A file that reads is then
// loaded into a small model the ways Tower loads weights: Model::load_weights, BackupAndRestore restoring a
// backup (weights, optimizer slots and training state), and Model::load, which rebuilds the architecture the
// file stores (under an AllocationLimit sized by the stored tensors) and then assigns the weights.
#include <cstring>
#include <vector>

#include "api/callbacks/backup_and_restore.h"
#include "api/io/weights_file.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzz_models.h"

namespace {

using namespace tower;

Sequential& model() {
  static Sequential m = fuzz::tower_model();
  return m;
}

void load_every_way(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input("input.weights", data, size);
  if (!fuzz::expect_clear_error([&] { io::read_weights_file(path); })) return;
  fuzz::expect_clear_error([&] { model().load_weights(path); });
  fuzz::expect_clear_error([&] { Model::load(path); });
  std::filesystem::create_directories(fuzz::scratch_dir() / "backup");
  fuzz::write_input("backup/latest.weights", data, size);
  callbacks::BackupAndRestore backup((fuzz::scratch_dir() / "backup").string(), {.delete_checkpoint = false});
  backup.set_model(model().operator->());
  fuzz::expect_clear_error([&] { backup.on_train_begin({}); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  load_every_way(data, size);
  if (size < 4) return 0;
  std::vector<std::uint8_t> fixed(data, data + size);
  const std::uint32_t crc = io::crc32(fixed.data(), size - 4);
  for (int i = 0; i < 4; ++i) fixed[size - 4 + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  if (std::memcmp(fixed.data(), data, size) != 0)
    load_every_way(fixed.data(), size);
  return 0;
}
