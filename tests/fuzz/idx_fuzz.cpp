// data::idx::read on any bytes: once as the file, once gzip-compressed (the reader detects gzip by content), so
// the decompressing path sees the same inputs as the plain one.
#include <zlib.h>

#include "api/data/idx.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tower;
  const std::string plain = fuzz::write_input("input-idx3-ubyte", data, size);
  fuzz::expect_clear_error([&] { data::idx::read(plain); });

  const std::string gz = (fuzz::scratch_dir() / "input-idx3-ubyte.gz").string();
  gzFile out = gzopen(gz.c_str(), "wb1");
  if (out == nullptr || (size > 0 && gzwrite(out, data, static_cast<unsigned>(size)) != static_cast<int>(size)) ||
      gzclose(out) != Z_OK)
    fuzz::finding("cannot write the gzip input", gz.c_str());
  fuzz::expect_clear_error([&] { data::idx::read(gz); });
  return 0;
}
