// The custom all-reduce's shared buffers and kernel arguments, shared by the
// kernels (allreduce.cu) and the host (libaiter/dist/custom_ar.cpp,
// libaiter/gpu/allreduce.cpp): plain data, passed by value.
#pragma once

constexpr int kArMaxRanks = 8;
constexpr int kArMaxBlocks = 256;  // blocks a launch may have (signal slots)
enum ArSlot { kArStart = 0, kArMid = 1, kArEnd = 2 };

// At the start of every rank's buffer.  flags[b][slot][r] is written by rank r's
// block b (a release store into this rank's memory) when it reaches barrier
// `slot` of its call number epochs[b]; epochs[b] is this rank's own count of
// launches of block b, which every rank keeps in step by making the same calls.
struct ArSignals {
  unsigned flags[kArMaxBlocks][3][kArMaxRanks];
  unsigned epochs[kArMaxBlocks];
};
// Where the data begins in each buffer (bytes; a multiple of 256 past the signals).
constexpr long long kArDataOffset = 32768;
static_assert(sizeof(ArSignals) <= kArDataOffset, "signals fit before the data");

// aiter_custom_all_reduce: n elements of x summed into out.  The input area of a
// buffer (kArDataOffset) holds a copy of its rank's x; the two-shot kernel writes
// the sums of its rank's shard to the reduced area (reduced_offset) for the peers.
struct AllReduceParams {
  char *bufs[kArMaxRanks];  // every rank's buffer as mapped in this process (own included)
  const void *x;
  void *out;
  long long n;             // elements
  long long shard_units;   // two-shot: vectors of 16 bytes a rank reduces
  long long reduced_offset;
  int rank, world;
  int x_aligned, out_aligned;  // 16-byte aligned: whole vectors may be loaded/stored
};

// aiter_custom_all_reduce_add_rmsnorm(_quant): rows of cols elements, one block a
// row (grid-stride past kArMaxBlocks), a 16-byte chunk a thread.
struct AllReduceNormParams {
  char *bufs[kArMaxRanks];
  const void *x;
  const void *residual;
  void *residual_out;
  const void *weight;
  void *out;         // x's dtype, or 8-bit when quant != kQuantNone
  float *scale_out;  // one per row when quantizing
  long long rows, cols;
  float eps, inv_cols;
  int rank, world;
  int params_f32;    // weight stored as fp32 (else as x's dtype)
  int quant;         // QuantKind
};
