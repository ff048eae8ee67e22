// Checked arguments of the mixture-of-experts ops, shared by every backend.
#pragma once

#include <cstddef>
#include <vector>

#include "aiter/moe.h"
#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "core/tensor.hpp"
#include "tuning/select.hpp"

namespace aiter {

// topk_softmax, topk_sigmoid, grouped_topk: one routing description.
struct RoutingArgs {
  const char *op;  // for messages
  DType dtype;  // of gating: fp32, fp16 or bf16
  const void *gating;
  RowView gating_rows;   // tokens x experts
  float *weights;        // fp32
  RowView weights_rows;  // tokens x k
  int32_t *ids;
  RowView ids_rows;  // tokens x k
  bool renormalize;
  bool sigmoid;           // scores: sigmoid (else softmax)
  int32_t groups;         // expert groups (1: plain top-k)
  int32_t topk_group;     // groups kept
  const void *bias;       // [experts] correction bias or null (sigmoid only)
  DType bias_dtype;       // fp32 or gating's dtype
  float scale;            // routed scaling factor
};

// moe_sorting; fused_moe sorts into its workspace with the same description.
struct SortingArgs {
  const char *op;      // for messages
  const int32_t *ids;  // topk_ids
  RowView ids_rows;    // tokens x k
  const void *mask;    // [experts] or null
  int32_t mask_bytes;  // 1 (uint8/bool) or 4 (int32)
  int32_t experts;     // global experts (the ids' range)
  int32_t block;       // rows per block
  int32_t *sorted;     // [rows]
  int64_t rows;        // >= max_rows
  int32_t *block_experts;  // [blocks]
  int64_t blocks;          // rows / block
  int32_t *num_valid;      // [1]
  int32_t *block_runs = nullptr;  // [blocks][2] or null: each block's expert's first block and block count
};

// The most experts moe_sorting / fused_moe take (the CPU keeps a count per
// expert; the GPU kernels take up to kMoeMaxExperts, kernels/moe/moe_params.h).
constexpr int kMoeMaxExpertsAny = 65536;
// Decode's stage 2 split along K (gpu/moe_fused.cpp): up to kMoeMaxSplits fp32
// partial rows a pair, which the workspace holds where there are at most
// kMoeSplitMaxPairs pairs.
constexpr int64_t kMoeMaxSplits = 8, kMoeSplitMaxPairs = 64;

int64_t moe_max_rows(int64_t tokens, int64_t topk, int64_t experts, int64_t block);

// topk_ids [T, k] int32 and the optional expert mask [experts] (int32 / uint8)
// into a.ids, ids_rows, mask, mask_bytes, experts, block (moe_sorting.cpp).
void check_sort_inputs(ArgCheck &c, SortingArgs &a, const DLTensor *ids, const DLTensor *mask, int64_t experts,
                       int64_t block);

// Where fused_moe keeps its intermediates in the caller's workspace.
struct MoeWorkspace {
  size_t sorted, block_experts, block_runs, num_valid, x_sorted, inter, pair_out;  // byte offsets
  size_t xq, x_scale, hq, h_scale;  // fp8 weights (elem_bytes 1) only
  size_t partials;                  // few pairs only (kMoeSplitMaxPairs)
  size_t total;  // bytes
  int64_t rows, blocks;
};
MoeWorkspace moe_workspace(int64_t tokens, int64_t topk, int64_t experts, int64_t hidden, int64_t inter,
                           int64_t elem_bytes, int64_t block, bool weights_on_input);

struct FusedMoeArgs {
  DType dtype;   // bf16 or fp16: x, out and the intermediates (and w1, w2 but for fp8)
  DType wdtype;  // of w1, w2: dtype, or e4m3fn / e4m3fnuz
  const float *w1_scale, *w2_scale;  // fp8: per channel or per 128 x 128 block (kernels/moe/moe_params.h)
  int32_t group;                     // fp8: 0 per channel, 128 block-scaled
  void *xq, *hq;                     // fp8: the stage inputs quantized per row
  float *x_scale, *h_scale;
  const void *x;
  int64_t x_stride;
  const void *w1;  // [local experts, 2I, H] contiguous
  const void *w2;  // [local experts, H, I] contiguous
  void *out;
  int64_t out_stride;
  const float *weights;
  int64_t weights_stride;
  int64_t tokens, topk, local_experts, hidden, inter;
  int32_t act;  // aiter_moe_activation
  bool weights_on_input;
  int32_t variant;  // MoeVariant: params.variant, or a tuned variant's
  SortingArgs sort;  // into the workspace
  void *x_sorted;    // [rows, H] with weights_on_input, else null
  void *inter_buf;   // [rows, I]
  void *pair_out;    // [tokens * topk, H]
  float *partials;   // [kMoeMaxSplits, tokens * topk, H] for at most kMoeSplitMaxPairs pairs, else null
};

// Nonzero entry e of an expert mask of `bytes`-wide elements.
inline bool mask_on(const void *mask, int32_t bytes, int64_t e) {
  if (mask == nullptr) return true;
  return bytes == 4 ? static_cast<const int32_t *>(mask)[e] != 0 : static_cast<const uint8_t *>(mask)[e] != 0;
}

// How the GPU stages run: params.variant's 0-2, the tile widths the tuned
// variants "mma_n128" / "mma_n64" fix, and the tuned variants "triton" (the
// Triton stages at any row count, their tiles by the heuristic),
// "triton_wide" and "triton_narrow" (those tiles fixed), "decode" (the
// one-kernel layer for few pairs; ops/moe_tuning.cpp).
enum MoeVariant : int32_t {
  kMoeAuto = 0, kMoePortable = 1, kMoeMma = 2, kMoeMmaWide = 3, kMoeMmaNarrow = 4, kMoeTriton = 5,
  kMoeTritonWide = 6, kMoeTritonNarrow = 7, kMoeDecode = 8
};
inline bool moe_triton_variant(int32_t v) { return v == kMoeTriton || v == kMoeTritonWide || v == kMoeTritonNarrow; }

// fused_moe / fused_moe_fp8 with params.variant 0: a forced variant, a tuned
// table row (ops "fused_moe", "fused_moe_fp8", "fused_moe_fp8_blockscale") or
// the heuristic (ops/moe_tuning.cpp).
aiter_status run_fused_moe_tuned(const FusedMoeArgs &a, const DLTensor *where, void *stream);
std::vector<TunedOpNames> moe_tuned_op_names();

namespace cpu {
aiter_status route(const RoutingArgs &a);
aiter_status moe_sorting(const SortingArgs &a);
aiter_status fused_moe(const FusedMoeArgs &a);
}  // namespace cpu

namespace gpu {
aiter_status route(const RoutingArgs &a, const GpuCall &call);
aiter_status moe_sorting(const SortingArgs &a, const GpuCall &call);
aiter_status fused_moe(const FusedMoeArgs &a, const GpuCall &call);
// Whether the tensor-core stages can run this call (dtype, alignment, block size, vendor).
bool fused_moe_mma_fits(const FusedMoeArgs &a, const GpuCall &call);
// Whether the Triton stages are built for this device and dtypes and can run this call.
bool fused_moe_triton_fits(const FusedMoeArgs &a, const GpuCall &call);
// Whether the one-kernel layer for few pairs can run this call (gpu/moe_decode.hpp).
bool fused_moe_decode_fits(const FusedMoeArgs &a, const GpuCall &call);
}  // namespace gpu

}  // namespace aiter
