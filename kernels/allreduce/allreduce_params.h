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
//
// The push kernels (allreduce.cu) keep no flags: push_calls counts their calls
// (each rank's count is the same: the ranks make the same calls), whose parity
// picks the push stage; push_arrived counts the blocks of the running call that
// are done, and the last one advances push_calls for the next call.
struct ArSignals {
  unsigned flags[kArMaxBlocks][3][kArMaxRanks];
  unsigned epochs[kArMaxBlocks];
  unsigned push_calls;
  unsigned push_arrived;
};
// Where the data begins in each buffer (bytes; a multiple of 256 past the signals).
constexpr long long kArDataOffset = 32768;
static_assert(sizeof(ArSignals) <= kArDataOffset, "signals fit before the data");

// The push areas, after the input and reduced areas: 2 stages x world slots of
// PushLayout::slot_bytes.  Sender q writes its message into slot q of the stage
// in every peer's buffer; an empty slot holds kArPushEmpty in every 32-bit word,
// a word no pushed message holds (the sender sends 0 for it: -0.0f as +0.0f, or
// a 16-bit pair (+0, -0) as (+0, +0)), so the receiver sees its data arrive
// word by word with no flag, then empties the slot again.
constexpr unsigned kArPushEmpty = 0x80000000u;
struct PushLayout {
  long long offset;      // of stage 0, slot 0 in every buffer
  long long slot_bytes;  // a multiple of 16
};

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
  PushLayout push;
  int rank, world;
  int x_aligned, out_aligned;  // 16-byte aligned: whole vectors may be loaded/stored
};

// aiter_custom_all_reduce_add_rmsnorm(_quant): rows of cols elements, one block a
// row (grid-stride past kArMaxBlocks), a 16-byte chunk a thread; the sum is pushed.
struct AllReduceNormParams {
  char *bufs[kArMaxRanks];
  PushLayout push;
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
