// data::decode_image on any bytes (PNG, JPEG, BMP and GIF go to stb_image, other formats are refused), with 1, 3
// or 4 channels by the input's length, then resize_bilinear of what decoded to a fixed size.
#include "api/core/allocator.h"
#include "api/data/image.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace tower;
  const std::string path = fuzz::write_input("input.img", data, size);
  static constexpr int kChannels[] = {1, 3, 4};
  const int channels = kChannels[size % 3];
  fuzz::expect_clear_error([&] {
    const Tensor image = data::decode_image(path, channels);
    if (image.rank() != 3 || image.dim(2) != channels) fuzz::finding("decode_image", "wrong shape");
    data::resize_bilinear(image, 5, 7);
  });
  // The CPU allocator keeps freed blocks for reuse by size; images of ever new sizes, up to kMaxImagePixels,
  // would pile up across inputs. One input's memory is what -rss_limit_mb judges.
  allocator_for(Device::cpu()).empty_cache();
  return 0;
}
