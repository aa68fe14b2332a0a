// stb_image compiled into the fuzz build of the image target, so the decoders are instrumented (CMakeLists.txt).
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
