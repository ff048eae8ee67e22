// Arguments of the MoE kernels, shared by the kernel sources and the host
// launchers (libaiter/gpu/moe*.cpp): plain data, passed by value.
#pragma once

constexpr int kMoeMaxExperts = 1024;  // the routing and sorting kernels keep an expert a lane slot / a shared int
constexpr int kRouteThreads = 128;    // four teams of 32 lanes, one token each
constexpr int kSortThreads = 1024;    // a sorting block: one thread an expert
constexpr int kSortPerThread = 4;     // pairs a thread loads at once (independent loads in flight)
constexpr int kSortChunk = kSortThreads * kSortPerThread;  // pairs a block of the multi-block sort

struct RoutingParams {
  const void *gating;  // [tokens, experts] fp32 / fp16 / bf16
  const void *bias;    // [experts] or null
  float *weights;      // [tokens, k]
  int *ids;            // [tokens, k]
  long long tokens, gating_stride, weights_stride, ids_stride;
  int experts, k, groups, topk_group;
  int gating_kind;     // 0 fp32, 1 fp16, 2 bf16
  int bias_kind;       // the same codes
  int sigmoid, renormalize;
  float scale;
};

struct SortingParams {
  const int *ids;      // topk_ids [tokens, topk]
  const void *mask;    // [experts] or null
  int *sorted;         // [rows]
  int *block_experts;  // [blocks]
  int *block_runs;     // [blocks][2] or null: the first block of each block's expert and its blocks (fused MoE)
  int *num_valid;      // [1]
  long long tokens, ids_stride, rows, blocks;
  int topk, experts, block, mask_bytes;
  // The multi-block sort (moe_sort_count, moe_sort_scatter): `parts` blocks of
  // kSortChunk pairs; partial [parts, experts]: each block's expert counts.
  int *partial;
  int parts;
  // moe_sort_count's zero_blocks blocks past `parts` zero `zero_bytes` bytes at
  // `zero` (the fused MoE's fp32 sums of the expert outputs), 16-byte aligned.
  void *zero;
  long long zero_bytes;
  int zero_blocks;
};

enum MoeAct { kMoeSilu = 0, kMoeGelu = 1, kMoeGeluTanh = 2 };

// Both stages and the gather / combine kernels.
struct FusedMoeParams {
  const void *x;          // [tokens, hidden]
  const void *w1;         // [local experts, 2 inter, hidden]
  const void *w2;         // [local experts, hidden, inter]
  void *out;              // [tokens, hidden]
  const float *weights;   // [tokens, topk]
  const int *ids;         // [tokens, topk]
  const void *mask;       // [experts] or null
  const int *sorted;      // [rows]: the pair of each row, pairs on padding rows
  const int *block_experts;
  const int *num_valid;
  void *x_sorted;         // [rows, hidden]: weights_on_input's scaled input, else null
  void *inter_buf;        // [rows, inter]
  void *pair_out;         // [pairs, hidden]
  // fp8 experts (quant != 0): per-channel weight scales, and the stage inputs
  // quantized per row with their scales.
  // Per channel (group 0): w1_scale [local experts, 2 inter], w2_scale [local
  // experts, hidden], x_scale / h_scale [rows].  Block-scaled (group 128):
  // w1_scale [local experts, 2 inter / 128, hidden / 128], w2_scale [local
  // experts, hidden / 128, inter / 128], x_scale [rows, hidden / 128], h_scale
  // [rows, inter / 128] (DeepSeek-V3: 128 x 128 weight blocks, 1 x 128 activations).
  const float *w1_scale;
  const float *w2_scale;
  void *xq;               // [rows, hidden] fp8
  float *x_scale;
  void *hq;               // [rows, inter] fp8
  float *h_scale;
  long long tokens, x_stride, out_stride, weights_stride, ids_stride, rows, blocks;
  int topk, hidden, inter, local_experts, experts, block, mask_bytes;
  int act, weights_on_input;
  int quant;              // QuantKind of the weights (kQuantE4m3fn / kQuantE4m3fnuz), 0 for 16-bit
  int group;              // fp8 scale groups along K: 0 per channel, 128 block-scaled
  int quant_source;       // moe_quant: 0 the input rows (x, times the weight with weights_on_input), 1 inter
  // Stage 2 (mma.sync here; the Triton stages take the same as arguments)
  // split along K into `splits` (> 1) blocks a tile, each writing its fp32
  // sums to partials [splits, pairs, hidden], which the combine adds up in
  // split order; 1: a row a pair in pair_out.
  float *partials;
  int splits;
  // The decode kernel (moe_decode.cu): stage 1's and stage 2's K split among
  // teams of 1, 2, 4 or 8 warps of a block (an item a team).
  int team1, team2;
};

// moe_quant's grid: per channel, rows of up to kMoeQuantShortRow values take a
// team of 32 lanes each, kMoeQuantTeams rows a block of 256 threads; longer
// rows a block each.  moe_quant_groups (1 x 128 groups): kMoeQuantWarpRows
// rows a warp, 8 warps a block.
constexpr int kMoeQuantShortRow = 2048, kMoeQuantTeams = 8, kMoeQuantWarpRows = 4;
inline bool moe_quant_short_rows(int values) { return values <= kMoeQuantShortRow; }  // (per channel)

// The fused MoE for few pairs (kernels/moe/moe_decode.cu): one cooperative
// kernel of kMoeDecodeBlocksPerSm blocks of kMoeDecodeThreads an SM, for up to
// kMoeDecodeMaxPairs token-expert pairs.
constexpr int kMoeDecodeThreads = 256, kMoeDecodeBlocksPerSm = 2, kMoeDecodeMaxPairs = 1024;
constexpr int kMoeDecodeSteps = 4;  // 64-byte K steps whose loads a warp issues at once
