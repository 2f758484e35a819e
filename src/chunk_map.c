#include "chunk_map.h"

/* 64 MiB of .bss: zero pages until a chunk is first marked. */
uint8_t hk_chunk_map[HK_MAP_LEN];
