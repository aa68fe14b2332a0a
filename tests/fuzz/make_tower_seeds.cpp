// Writes the seeds only Tower itself can write well (tests/fuzz/README.md): into <corpus>/weights_file, the
// Tower weights files of save_weights, Model::save, a BackupAndRestore backup and an empty file; into
// <corpus>/keras_weights, the Keras 3 file Tower writes. Usage: fuzz_make_tower_seeds tests/fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <vector>

#include "api/callbacks/backup_and_restore.h"
#include "api/io/weights_file.h"
#include "tests/fuzz/fuzz_models.h"

int main(int argc, char** argv) {
  using namespace tower;
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path weights_dir = fs::path(argv[1]) / "weights_file";
  const fs::path keras_dir = fs::path(argv[1]) / "keras_weights";
  fs::create_directories(weights_dir);
  fs::create_directories(keras_dir);

  Sequential model = fuzz::tower_model();
  model.save_weights((weights_dir / "seed-save-weights").string());
  model.save((weights_dir / "seed-model-save").string());
  io::write_weights_file((weights_dir / "seed-empty").string(), {});

  const fs::path backup_dir = fs::temp_directory_path() / "tower-fuzz-seeds-backup";
  fs::remove_all(backup_dir);
  auto backup = std::make_shared<callbacks::BackupAndRestore>(backup_dir.string(),
                                                              callbacks::BackupAndRestoreOptions{.delete_checkpoint = false});
  std::vector<float> x(8 * 3), y(8 * 2);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 3) * 0.5f - 0.5f;
  model.fit(Tensor::from_vector(x, {8, 3}), Tensor::from_vector(y, {8, 2}),
            {.epochs = 1, .batch_size = 4, .verbose = 0, .callbacks = {backup}, .shuffle = false});
  fs::copy_file(backup->backup_path(), weights_dir / "seed-backup", fs::copy_options::overwrite_existing);
  fs::remove_all(backup_dir);

  fuzz::keras_model().save_weights((keras_dir / "seed-tower.weights.h5").string());
  std::printf("Tower seeds written under %s\n", argv[1]);
  return 0;
}
