// Keras weight files (HDF5) on any bytes, loaded into a small model through Model::load_weights both as a
// Keras 3 ".weights.h5" file and as a legacy ".h5" file (the format is chosen by the name), and browsed through
// io::Hdf5File (groups, attributes, every dataset read whatever its shape) with Tower's own HDF5 reader.
#include "api/io/hdf5_file.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/fuzz_models.h"

namespace {

using namespace tower;

Model& model() {
  static Model m = fuzz::keras_model();
  return m;
}

// Every group, attribute and dataset a loader might touch, to a bounded depth.
void browse(const io::Hdf5Group& group, int depth) {
  for (const std::string& name : group.children()) {
    if (group.has_dataset(name)) {
      fuzz::expect_clear_error([&] { group.read_dataset(name); });
    } else if (group.has_group(name) && depth < 4) {
      fuzz::expect_clear_error([&] { browse(group.group(name), depth + 1); });
    }
  }
  for (const char* attribute : {"name", "layer_names", "weight_names", "fixed", "vlen"})
    if (group.has_attribute(attribute)) fuzz::expect_clear_error([&] { group.string_list_attribute(attribute); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const char* name : {"input.weights.h5", "input.h5"}) {
    const std::string path = fuzz::write_input(name, data, size);
    fuzz::expect_clear_error([&] { model().load_weights(path); });
  }
  fuzz::expect_clear_error([&] { browse(io::Hdf5File::open((fuzz::scratch_dir() / "input.h5").string()), 0); });
  return 0;
}
