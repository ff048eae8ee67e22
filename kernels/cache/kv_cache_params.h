// Arguments of the paged-KV-cache write kernels, shared by the kernel source and
// the host launcher (libaiter/gpu/kv_cache.cpp): plain data, passed by value.
#pragma once

#include "../common/token_grid.h"

struct CacheWriteParams {
  TokenGrid grid;           // items: kv_heads * chunks_per_head a token, each for key and value
  const void *key, *value;  // [tokens, kv_heads, head_dim], unit stride along head_dim
  void *k_cache, *v_cache;  // [num_blocks, page_size, kv_heads, head_dim], compact
  const void *slot_mapping; // [tokens] int32 or int64, compact; values not checked on the host
  long long key_token_stride, key_head_stride;  // elements
  long long value_token_stride, value_head_stride;
  long long num_slots;      // num_blocks * page_size
  float k_scale, v_scale;   // fp8 caches store x / scale
  int slots_int64;
  int kv_heads, head_dim;
  int chunks_per_head;      // head_dim / elements a thread writes of key (and of value)
  int quant;                // QuantKind of an fp8 cache (the fp8 variants only)
};
