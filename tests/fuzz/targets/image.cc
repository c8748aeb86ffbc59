// Fuzz target: evaluate's image decoding (libjpeg-turbo's TurboJPEG, libpng) and the center crop.
#include <cstdint>

#include "fuzz_input.h"
#include "tools/evaluate/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const bool png = size >= 4 && data[0] == 0x89 && data[1] == 'P';
  auto img = ferry::tools::evaluate::decode_image(ferry::fuzz::as_file(data, size, png ? "in.png" : "in.jpg"));
  if (!img.ok()) return 0;
  auto crop = ferry::tools::evaluate::center_crop(*img, 7, 5, "fuzz");
  (void)crop;
  return 0;
}
