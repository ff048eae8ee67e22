// GPU launcher of paged decode attention: blocks of (sequence, split) x (kv head,
// row block), then, with several splits, the merge (kernels/attention/decode.cu).
// On NVIDIA, 16-bit queries run the tensor-core kernel (decode_mma.cu: 16 rows a
// block); on AMD, the Triton one where built (attention_decode_triton.cpp:
// MFMA / WMMA); elsewhere (fp32 queries) the portable one (decode.cu).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "gpu/attention_common.hpp"
#include "gpu/attention_decode_triton.hpp"
#include "gpu/launch.hpp"

namespace aiter {
namespace gpu {
namespace {

constexpr unsigned kThreads = 128;  // the kernels' block
constexpr int64_t kKeyTile = 32;    // keys a tile: splits start on tile boundaries
constexpr int64_t kMmaKeyRound = 64;  // the tensor-core kernel's 4 warps x 16 keys
constexpr int64_t kMaxGridY = 65535;
static_assert(kDecodeMaxSplits <= 64, "decode_mma.cu's merge holds the weights of 64 splits");

// AITER_DECODE_KERNEL=portable runs the portable kernel on NVIDIA too (the AMD
// targets' kernel, tested and timed where AMD hardware is not at hand).
bool portable_forced() {
  static const bool forced = portable_requested("AITER_DECODE_KERNEL");
  return forced;
}

// The tensor-core kernel: NVIDIA, 16-bit queries, caches on 16-byte boundaries
// (cp.async copies of whole rows; compact rows of 64 bytes or more keep it).
bool use_mma(const DecodeArgs &a, const GpuCall &call) {
  return call.device.device_type == kDLCUDA && !portable_forced() && (a.dtype == DType::bf16 || a.dtype == DType::f16) &&
         a.shape.v_head_dim == a.shape.head_dim && aligned16(a.cache.k) && aligned16(a.cache.v);
}

// Rows a block: the smallest kernel that holds a sequence's rows (new tokens x
// query heads of one kv head), so no row slot idles; 16 at most (the tensor-core
// kernel: always 16, one m16 tile).
int rows_per_block(int64_t rows_per_seq, bool mma) {
  return mma || rows_per_seq > 8 ? 16 : rows_per_seq <= 4 ? 4 : 8;
}

std::string kernel_variant(const DecodeArgs &a, bool mma, int rows) {
  const std::string dt = dtype_tag(a.dtype), d = ".d" + std::to_string(a.shape.head_dim);
  if (mma) return "mma." + dt + "." + (is_fp8(a.cache.dtype) ? dtype_tag(a.cache.dtype) : "same") + d;
  return dt + (is_fp8(a.cache.dtype) ? ".fp8" : ".same") + d + ".r" + std::to_string(rows);
}

// Splits of the context: enough blocks for two waves over the multiprocessors,
// within what the workspace holds.  Shapes and the device only: never the
// lengths, which live in device memory and change between graph replays.
aiter_status plan_splits(const DecodeArgs &a, int64_t blocks, int64_t capacity, const GpuCall &call, int *splits) {
  *splits = 1;
  if (a.workspace == nullptr) return AITER_OK;
  int sms = 0;
  const aiter_status s = multiprocessors(call, &sms);
  if (s != AITER_OK) return s;
  const int64_t wanted = (2 * int64_t(sms) + blocks - 1) / blocks;
  *splits = int(std::clamp<int64_t>(wanted, 1, decode_max_splits(capacity)));
  return AITER_OK;
}

// The merge of decode.cu (after the portable kernel), or of decode_mma.cu (after
// the tensor-core one: the same contract, more loads in flight a thread).
aiter_status merge_splits(const DecodeArgs &a, const DecodeParams &p, bool mma, const GpuCall &call) {
  DecodeMergeParams m{};
  m.partial_out = p.partial_out;
  m.partial_lse = p.partial_lse;
  m.out = a.out;
  m.out_seq_stride = a.out_seq_stride;
  m.out_token_stride = a.out_strides.token;
  m.out_head_stride = a.out_strides.head;
  m.rows = p.batch * p.q_tokens * p.q_heads;
  m.q_tokens = p.q_tokens;
  m.q_heads = p.q_heads;
  m.splits = p.splits;
  m.head_dim = int(a.shape.v_head_dim);
  if (mma && m.head_dim > int(kThreads))  // decode_mma.cu's merge: a thread a dim (the kernel takes D 64 and 128)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_paged_decode_attention: head dim %d is more than the "
                "tensor-core merge's %d", m.head_dim, int(kThreads));
  return launch(call, "paged_decode_attention", std::string(mma ? "mma.merge." : "merge.") + dtype_tag(a.dtype),
                Dim3{unsigned(m.rows), 1, 1}, kThreads, m);
}

}  // namespace

aiter_status paged_decode_attention(const DecodeArgs &a, const GpuCall &call) {
  const AttentionShape &sh = a.shape;
  if (a.batch == 0 || sh.q_heads == 0) return AITER_OK;
  const int64_t group = sh.q_heads / sh.kv_heads, rows_per_seq = a.q_tokens * group;
  bool triton = false;
  aiter_status s = decode_triton_chosen(a, call, &triton);
  if (s != AITER_OK) return s;
  bool mma = !triton && use_mma(a, call);
  int rows = triton ? kDecodeTritonRows : rows_per_block(rows_per_seq, mma);
  const int64_t row_blocks = (rows_per_seq + rows - 1) / rows;
  const int64_t capacity = std::min<int64_t>(a.max_blocks * a.cache.page_size, INT_MAX);  // lengths are int32
  int splits = 1;
  s = plan_splits(a, a.batch * sh.kv_heads * row_blocks, capacity, call, &splits);
  if (s != AITER_OK) return s;
  if (a.batch * splits > INT_MAX || sh.kv_heads * row_blocks > kMaxGridY)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_paged_decode_attention: %lld sequences of %lld kv heads are "
                "more than one launch holds", (long long)a.batch, (long long)sh.kv_heads);
  // The tensor-core kernel's grid is flat: ((sequence, split), kv head, row block);
  // past its bound the portable kernel (same rows a block) runs instead.
  if (mma && a.batch * splits * sh.kv_heads * row_blocks > INT_MAX) mma = false;

  DecodeParams p{};
  p.sm = softmax_params(sh, a.cache.k_scale, a.cache.v_scale, a.cache.dtype);
  p.q = a.q;
  p.out = a.out;
  p.k_cache = a.cache.k;
  p.v_cache = a.cache.v;
  p.block_table = a.block_table;
  p.context_lens = a.context_lens;
  p.q_seq_stride = a.q_seq_stride, p.q_token_stride = a.q_strides.token, p.q_head_stride = a.q_strides.head;
  p.out_seq_stride = a.out_seq_stride, p.out_token_stride = a.out_strides.token;
  p.out_head_stride = a.out_strides.head;
  p.table_stride = a.block_table_stride;
  p.num_blocks = a.cache.num_blocks;
  p.max_blocks = int(std::min<int64_t>(a.max_blocks, INT_MAX));
  p.page_size = int(a.cache.page_size);
  p.batch = int(a.batch), p.q_tokens = int(a.q_tokens), p.q_heads = int(sh.q_heads), p.kv_heads = int(sh.kv_heads);
  p.row_blocks = int(row_blocks);
  p.splits = splits;
  const int64_t per_split = (capacity + splits - 1) / splits;
  const int64_t round = triton ? kDecodeTritonKeys : mma ? kMmaKeyRound : kKeyTile;
  p.split_keys = int(std::min<int64_t>((per_split + round - 1) / round * round, INT_MAX));
  if (splits > 1) {
    p.partial_out = static_cast<float *>(a.workspace);
    p.partial_lse = p.partial_out + int64_t(p.batch) * p.q_tokens * p.q_heads * splits * sh.v_head_dim;
  }
  p.vec = aligned16(a.cache.k) && aligned16(a.cache.v);
  const Dim3 grid = mma ? Dim3{unsigned(a.batch * splits * sh.kv_heads * row_blocks), 1, 1}
                        : Dim3{unsigned(a.batch * splits), unsigned(sh.kv_heads * row_blocks), 1};
  s = triton ? paged_decode_triton(a, p, call)
             : launch(call, "paged_decode_attention", kernel_variant(a, mma, rows), grid, kThreads, p);
  if (s != AITER_OK || splits == 1) return s;
  return merge_splits(a, p, mma, call);
}

aiter_status decode_device_ready(const DecodeArgs &, const GpuCall &call) {
  DeviceScope scope(call.device);
  return scope.status();
}

}  // namespace gpu
}  // namespace aiter
