/* Size-class tables (generated once by the formula in size_class.h and
 * checked against it, size by size, by tests/test_size_class.c): 16-byte
 * steps up to 128 B, then 8 classes per power of two up to 32 KiB, so waste
 * stays <= 12.5% above 128 B. */
#include "size_class.h"

const uint32_t hk_class_size[HK_NCLASS] = {
  16, 32, 48, 64, 80, 96, 112, 128,
  144, 160, 176, 192, 208, 224, 240, 256,
  288, 320, 352, 384, 416, 448, 480, 512,
  576, 640, 704, 768, 832, 896, 960, 1024,
  1152, 1280, 1408, 1536, 1664, 1792, 1920, 2048,
  2304, 2560, 2816, 3072, 3328, 3584, 3840, 4096,
  4608, 5120, 5632, 6144, 6656, 7168, 7680, 8192,
  9216, 10240, 11264, 12288, 13312, 14336, 15360, 16384,
  18432, 20480, 22528, 24576, 26624, 28672, 30720, 32768,
};

/* class of n for n <= 1024, indexed by (n + 15) / 16 */
const uint8_t hk_class_small[HK_SMALL_MAX / 16 + 1] = {
  0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
  15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23,
  23, 24, 24, 24, 24, 25, 25, 25, 25, 26, 26, 26, 26, 27, 27, 27,
  27, 28, 28, 28, 28, 29, 29, 29, 29, 30, 30, 30, 30, 31, 31, 31,
  31,
};
