// Arguments of the rotary-embedding kernels, shared by the kernel source and the
// host launcher (libaiter/gpu/rope.cpp): plain data, passed by value.
#pragma once

#include "../common/token_grid.h"

// One of q or k: [tokens, heads, head_dim], unit stride along head_dim.
struct RopeHeadsParams {
  void *data;  // null, with heads == 0, for an absent k
  int heads;
  long long token_stride, head_stride;  // elements
};

struct RopeParams {
  TokenGrid grid;         // items: (q.heads + k.heads) * chunks_per_head a token
  RopeHeadsParams q, k;
  const void *positions;  // [tokens] int32 or int64; values not checked on the host
  const void *cache;      // [max_position, rotary_dim] compact, fp32 or q's dtype
  long long pos_stride;   // elements
  long long max_position;
  int pos_int64;
  int half;               // rotary_dim / 2: the pairs of a head
  int chunks_per_head;    // half / pairs a thread rotates
};
