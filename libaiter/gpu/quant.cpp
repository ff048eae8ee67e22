// GPU launchers of the quantization kernels (kernels/quant/).  Per token: one
// block per row.  Per tensor: grid-stride kernels sized to fill the device; the
// dynamic op, where the driver launches cooperatively and x is contiguous and
// of a size it pays for (plan_resident), as one kernel whose blocks meet at a
// grid barrier (quant_resident.cu), else in four stream-ordered steps
// (memset, amax, quantize, finalize).  Nothing is allocated and nothing waits
// on the host.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "gpu/launch.hpp"
#include "kernels/common/quant_kind.h"
#include "kernels/quant/quant_params.h"
#include "ops/quant.hpp"

namespace aiter {
namespace gpu {
namespace {

constexpr int kTokenThreads = 512;   // the per-token kernels' launch bound
constexpr int kTensorThreads = 256;  // the per-tensor kernels' launch bound
constexpr int kChunk = 8;            // elements a vector access moves
constexpr int kAmaxUnroll = 4;       // chunks a thread of the amax kernel handles per step
constexpr int kQuantizeUnroll = 2;   // the same for the quantizing kernel
// Amax grid: blocks of 256 threads an SM holds at once at <= 32 registers a
// thread.  Four left the kernel latency-bound (Nsight Compute, H100, 4096 x 4096
// bf16: 48% occupancy, 65% of DRAM bandwidth); eight made the dynamic op 1-3%
// faster (16384 x 4096: 124.9 -> 122.1 us), sixteen no faster than eight.
constexpr int kBlocksPerSm = 8;
constexpr unsigned kMaxGridY = 65535;

QuantKind kind_of(DType t) {
  switch (t) {
    case DType::i8: return kQuantInt8;
    case DType::e4m3fn: return kQuantE4m3fn;
    case DType::e4m3fnuz: return kQuantE4m3fnuz;
    default: return kQuantE5m2;
  }
}

bool aligned(const void *p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

QuantParams params_of(const QuantArgs &a) {
  QuantParams p{};
  p.x = a.x;
  p.out = a.out;
  p.rows = a.x_rows.rows;
  p.cols = a.x_rows.cols;
  p.x_stride = a.x_rows.row_stride;
  p.out_stride = a.out_rows.row_stride;
  p.quant = kind_of(a.out_dtype);
  return p;
}

// The vector variants read 16-byte pieces of x and write 8-byte pieces of out,
// so every row must start on such a boundary and hold whole chunks.
bool can_vectorize(const QuantArgs &a, const QuantParams &p) {
  const int64_t x_bytes = dtype_size(a.x_dtype);
  return p.cols % kChunk == 0 && aligned(p.x, 16) && aligned(p.out, 8) && (p.x_stride * x_bytes) % 16 == 0 &&
         p.out_stride % 8 == 0;
}

// Unaligned elements would fault on the GPU (the CPU tolerates them).
aiter_status check_alignment(const QuantArgs &a, const char *op, const void *scale) {
  if (!aligned(a.x, size_t(dtype_size(a.x_dtype))))
    return fail(AITER_ERR_INVALID_ARGUMENT, "%s: x: expected data aligned to its %d-byte elements on the GPU", op,
                dtype_size(a.x_dtype));
  if (scale && !aligned(scale, 4))
    return fail(AITER_ERR_INVALID_ARGUMENT, "%s: scale: expected data aligned to 4 bytes on the GPU", op);
  return AITER_OK;
}

// ---- per token ------------------------------------------------------------------
// Chunks of 8 a thread keeps in registers, and the variant holding them.
struct TokenPlan {
  int per_thread;  // 0: the two-pass variant
  unsigned threads;
};

TokenPlan plan_token(int64_t chunks) {
  for (int r : {2, 4, 8})
    if (chunks <= int64_t(kTokenThreads) * r) {
      // Whole 64-thread groups (wave64 on AMD), each thread up to r chunks.
      const int64_t threads = std::max<int64_t>(64, (chunks + r - 1) / r + 63) / 64 * 64;
      return {r, unsigned(std::min<int64_t>(threads, kTokenThreads))};
    }
  return {0, unsigned(kTokenThreads)};
}

// ---- per tensor -----------------------------------------------------------------
// Contiguous rows (x and out both) fold into one long row, which the grid-stride
// kernels walk with every block; otherwise blocks stride over rows too.
void fold_rows(QuantParams &p) {
  if (p.rows > 1 && p.x_stride == p.cols && p.out_stride == p.cols) {
    p.cols *= p.rows;
    p.rows = 1;
    p.x_stride = p.out_stride = p.cols;
  }
}

// Blocks along a row: one per tile of kTensorThreads * unroll chunks, at most
// `max_along`; blocks across rows: the rest of `max_blocks`, at most grid.y's limit.
void size_grid(QuantParams &p, int per_chunk, int unroll, int64_t max_along, int64_t max_blocks, Dim3 *grid) {
  const int64_t tile = int64_t(kTensorThreads) * unroll * per_chunk;
  const int64_t along = std::min<int64_t>(max_along, (p.cols + tile - 1) / tile);
  const int64_t across = std::min<int64_t>({p.rows, std::max<int64_t>(1, max_blocks / along), int64_t(kMaxGridY)});
  p.grid_cols = unsigned(along);
  p.grid_rows = unsigned(across);
  *grid = Dim3{p.grid_cols, p.grid_rows, 1};
}

// The pair variant reads 2 elements and writes 2 bytes in one access each.
bool can_pair(const QuantArgs &a, const QuantParams &p) {
  return p.cols % 2 == 0 && aligned(p.x, 2 * size_t(dtype_size(a.x_dtype))) && aligned(p.out, 2) &&
         p.x_stride % 2 == 0 && p.out_stride % 2 == 0;
}

// Chunks of the quantizing kernel: 8 elements, 2 a thread, where x allows and
// the tensor fills the SMs with such tiles; with fewer tiles than SMs, a pair of
// elements a thread.  (Nsight Compute, H100, static 1 x 4096 bf16: the one tile
// of 8 x 2 ran 180 instructions a warp one after another on one SM, 3.0 us,
// against torch.compile's 2.3 us in 16 blocks of 2 elements a thread.)  Tensors
// not in 8-element chunks take the pair kernel where they can, else 1 element.
// Measured only at 1-16 rows of 4096 / 8192.
struct TensorChunks {
  int per_chunk, unroll;
  const char *tag;
};

TensorChunks tensor_chunks(const QuantArgs &a, const QuantParams &p, int sms) {
  const int64_t tile = int64_t(kTensorThreads) * kQuantizeUnroll * kChunk;
  const bool few_tiles = p.rows * ((p.cols + tile - 1) / tile) < sms;
  if (can_vectorize(a, p) && !(few_tiles && can_pair(a, p))) return {kChunk, kQuantizeUnroll, ".vec"};
  if (can_pair(a, p)) return {2, 1, ".vec2"};
  return {1, kQuantizeUnroll, ".scalar"};
}

// Quantizes all of x with the scale in `scale_in` (an amax when `is_amax`): one
// block per tile, as many as there are (grid.x takes 2^31 - 1).
aiter_status launch_tensor_quantize(const QuantArgs &a, const GpuCall &call, const float *scale_in, bool is_amax) {
  QuantParams p = params_of(a);
  fold_rows(p);
  p.scale_in = scale_in;
  p.scale_is_amax = is_amax;
  int sms = 0;
  aiter_status s = multiprocessors(call, &sms);
  if (s != AITER_OK) return s;
  const TensorChunks chunks = tensor_chunks(a, p, sms);
  Dim3 grid;
  size_grid(p, chunks.per_chunk, chunks.unroll, INT32_MAX, INT64_MAX, &grid);
  // Pairs of one row take the loop-free kernel of their format (quant.cu tensor_pairs).
  const bool one_row_pairs = chunks.per_chunk == 2 && p.rows == 1 && p.cols <= INT32_MAX;
  const std::string variant = one_row_pairs
                                  ? std::string("pairs.") + dtype_tag(a.x_dtype) + "." + dtype_tag(a.out_dtype)
                                  : std::string("tensor.") + dtype_tag(a.x_dtype) + chunks.tag;
  return launch(call, "quant", variant, grid, kTensorThreads, p);
}

// The amax kernel ends in one atomic per block, so its grid is only as large as
// the device holds at once, each block striding over many tiles.
aiter_status launch_tensor_amax(const QuantArgs &a, const GpuCall &call) {
  QuantParams p = params_of(a);
  fold_rows(p);
  p.scale = a.scale;
  int sms = 0;
  aiter_status s = multiprocessors(call, &sms);
  if (s != AITER_OK) return s;
  const int64_t resident = int64_t(std::max(sms, 1)) * kBlocksPerSm;
  const bool vec = can_vectorize(a, p);
  Dim3 grid;
  size_grid(p, vec ? kChunk : 1, kAmaxUnroll, resident, resident, &grid);
  const std::string variant = std::string("amax.") + dtype_tag(a.x_dtype) + (vec ? ".vec" : ".scalar");
  return launch(call, "quant", variant, grid, kTensorThreads, p);
}

// ---- per tensor, resident ----------------------------------------------------------
// quant_resident.cu: blocks of 1024 threads, all resident, each owning a stretch
// of x's 16-byte pieces and keeping up to `held_steps` steps of 1024 pieces of
// it in shared memory.  Only for x and out contiguous, in whole pieces.
constexpr int kResidentThreads = 1024;
constexpr int kPieceBytes = 16;
constexpr int kStaticSmem = 1024;  // the kernel's own shared memory, with room to spare
constexpr int64_t kMinBlockPieces = 256;  // pieces a block at least: 4 KiB of x

struct ResidentPlan {
  QuantParams params;
  std::string variant;
  unsigned blocks, smem;
};

// Whether the call's device has `variant` (a cached lookup once it is loaded):
// a manifest written before the kernel existed leaves the four-step op.
bool resident_kernel_built(const GpuCall &call, const std::string &variant) {
  DeviceScope scope(call.device);
  Kernel kernel;
  if (find_for_block(scope, call, "quant", variant, kResidentThreads, &kernel) == AITER_OK) return true;
  clear_error();
  return false;
}

// One block an SM (fewer for small x), each holding up to all the shared memory
// a block can have; no block empty.  False where the tensor, its size, the driver or the
// manifest rules the kernel out.
bool plan_resident(const QuantArgs &a, const GpuCall &call, ResidentPlan *plan) {
  QuantParams p = params_of(a);
  fold_rows(p);
  int smem_limit = 0, sms = 0;
  if (p.rows != 1 || !can_vectorize(a, p) || cooperative_smem_limit(call, &smem_limit) != AITER_OK ||
      multiprocessors(call, &sms) != AITER_OK)
    return false;
  const int64_t step_bytes = int64_t(kResidentThreads) * kPieceBytes;
  const int64_t max_held = (smem_limit - kStaticSmem) / step_bytes;
  // Up to three times what the blocks can hold in shared memory: above, most of
  // x is read twice either way (an earlier variant, H100, bf16: 16384 x 4096
  // 123.0 us against the four-step op's 117.9).  Below, one launch beats the
  // four steps down to the smallest x that comes here (single-call graph
  // replays, H100, bf16 x 4096: 16 / 256 / 1024 / 8192 tokens 8.9-9.1 / 10.4-10.5 /
  // 13.8-13.9 / 52.6 us against 9.6 / 10.9-11.1 / 15.0 / 63.0; docs/performance.md).
  const int64_t x_bytes = p.cols * dtype_size(a.x_dtype), held_bytes = sms * max_held * step_bytes;
  if (max_held < 1 || x_bytes > 3 * held_bytes) return false;
  const std::string variant = std::string("resident.") + dtype_tag(a.x_dtype);
  if (!resident_kernel_built(call, variant)) return false;
  p.scale = a.scale;
  p.pieces = x_bytes / kPieceBytes;
  // At least kMinBlockPieces a block, so that the blocks' amaxes, a word each at
  // the start of out (at most sms pieces of out), lie in block 0's first step:
  // fewer blocks than SMs for x under sms * 4 KiB.
  p.block_pieces = std::max<int64_t>((p.pieces + sms - 1) / sms, kMinBlockPieces);
  p.grid_cols = unsigned((p.pieces + p.block_pieces - 1) / p.block_pieces);
  const int64_t slot_pieces = (4 * int64_t(p.grid_cols) * dtype_size(a.x_dtype) + kPieceBytes - 1) / kPieceBytes;
  if (slot_pieces > std::min<int64_t>(p.block_pieces, kResidentThreads)) return false;
  const int64_t steps = (p.block_pieces + kResidentThreads - 1) / kResidentThreads;
  p.held_steps = int(std::min(steps, max_held));
  *plan = ResidentPlan{p, variant, p.grid_cols, unsigned(p.held_steps * step_bytes)};
  return true;
}

// No memset: the kernel zeroes the scale slot itself, before its grid barrier,
// and counts there after it.
aiter_status launch_tensor_resident(const ResidentPlan &plan, const GpuCall &call) {
  return launch_cooperative(call, "quant", plan.variant, Dim3{plan.blocks, 1, 1}, kResidentThreads, plan.smem,
                            plan.params);
}

}  // namespace

aiter_status quant_per_token_dynamic(const QuantArgs &a, const GpuCall &call) {
  const char *op = "aiter_quant_per_token_dynamic";
  aiter_status s = check_alignment(a, op, a.scale);
  if (s != AITER_OK) return s;
  if (a.x_rows.cols == 0) return memset_u32(call, a.scale, bits_of(1.0f), size_t(a.scale_count));  // amax 0
  QuantParams p = params_of(a);
  p.scale = a.scale;
  if (p.rows > INT32_MAX)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "%s: at most %d rows on the GPU, got %lld", op, INT32_MAX,
                (long long)p.rows);
  const bool vec = can_vectorize(a, p);
  const TokenPlan plan = vec ? plan_token(p.cols / kChunk) : TokenPlan{0, unsigned(kTokenThreads)};
  std::string variant = std::string("token.") + dtype_tag(a.x_dtype);
  if (plan.per_thread > 0)
    variant += ".r" + std::to_string(plan.per_thread);
  else
    variant += vec ? ".loop.vec" : ".loop.scalar";
  return launch(call, "quant", variant, Dim3{unsigned(p.rows), 1, 1}, plan.threads, p);
}

// Up to this many elements one block does the whole per-tensor op in one launch
// instead of memset + three launches.  Measured on an H100 under graph replay:
// 1 x 4096 bf16 6.1 us (10.4 before), but 16 x 4096 took 22 us in one block
// against 11 us with all blocks, so the cut is well below that.
constexpr int64_t kSmallTensor = 16384;

aiter_status quant_per_tensor_dynamic(const QuantArgs &a, const GpuCall &call) {
  aiter_status s = check_alignment(a, "aiter_quant_per_tensor_dynamic", a.scale);
  if (s != AITER_OK) return s;
  if (a.x_rows.rows == 0 || a.x_rows.cols == 0) return memset_u32(call, a.scale, bits_of(1.0f), 1);  // amax 0
  if (a.x_rows.rows * a.x_rows.cols <= kSmallTensor) {
    QuantParams p = params_of(a);
    p.scale = a.scale;
    p.grid_cols = p.grid_rows = 1;
    const bool vec = can_vectorize(a, p);
    return launch(call, "quant", std::string("small.") + dtype_tag(a.x_dtype) + (vec ? ".vec" : ".scalar"),
                  Dim3{1, 1, 1}, kTensorThreads, p);
  }
  ResidentPlan plan;
  if (plan_resident(a, call, &plan)) return launch_tensor_resident(plan, call);
  // The slot holds amax's bits until `finalize`; 0 is the amax of nothing.
  s = memset_u32(call, a.scale, 0, 1);
  if (s == AITER_OK) s = launch_tensor_amax(a, call);
  if (s == AITER_OK) s = launch_tensor_quantize(a, call, a.scale, true);
  if (s != AITER_OK) return s;
  QuantParams p{};
  p.scale = a.scale;
  p.quant = kind_of(a.out_dtype);
  return launch(call, "quant", "finalize", Dim3{1, 1, 1}, 1, p);
}

aiter_status quant_per_tensor_static(const QuantArgs &a, const GpuCall &call) {
  aiter_status s = check_alignment(a, "aiter_quant_per_tensor_static", a.scale_in);
  if (s != AITER_OK) return s;
  if (a.x_rows.rows == 0 || a.x_rows.cols == 0) return AITER_OK;
  return launch_tensor_quantize(a, call, a.scale_in, false);
}

}  // namespace gpu
}  // namespace aiter
