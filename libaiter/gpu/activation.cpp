// GPU launchers of the activation kernels (kernels/activation/activation.cu).
#include <algorithm>
#include <cstdint>
#include <string>

#include "gpu/launch.hpp"
#include "kernels/activation/activation_params.h"
#include "kernels/common/quant_kind.h"
#include "ops/activation.hpp"

namespace aiter {
namespace gpu {
namespace {

// What the kernels were built for (activation.cu).
constexpr int64_t kGatedThreads = 256;   // the gated kernels' launch bound
constexpr int64_t kQuantThreads = 1024;  // the quantizing kernels' launch bound
constexpr int64_t kQuantChunks = 4;      // chunks a thread keeps in registers in the .vec quantizing kernels

constexpr int64_t kMinThreads = 64;       // one AMD wavefront, two NVIDIA warps
constexpr int64_t kMaxRowBlocks = 65535;  // grid extent over rows (CUDA's limit for y); kernels loop past it
constexpr int64_t kBusyBlocks = 1024;     // enough blocks to keep every SM of a large GPU busy

const char *dtype_tag(DType t) { return t == DType::f32 ? "f32" : t == DType::f16 ? "f16" : "bf16"; }

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }
bool aligned(const void *p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % uintptr_t(bytes) == 0; }

// The vector kernels read 16-byte chunks of N elements of the gate and the up
// half, so d and x's row stride must be multiples of N and x 16-byte aligned;
// they write chunks of N elements of out (`out_size` bytes each) the same way.
bool can_vectorize(const ActivationArgs &a, int64_t per_vector, int64_t out_size) {
  return a.out_rows.cols % per_vector == 0 && a.x_rows.row_stride % per_vector == 0 &&
         a.out_rows.row_stride % per_vector == 0 && aligned(a.x, 16) && aligned(a.out, per_vector * out_size);
}

ActivationParams params_of(const ActivationArgs &a, int64_t rows) {
  ActivationParams p{};
  p.x = a.x;
  p.out = a.out;
  p.scale_out = a.scale;
  p.rows = rows;
  p.cols = a.out_rows.cols;
  p.x_stride = a.x_rows.row_stride;
  p.out_stride = a.out_rows.row_stride;
  p.row_step = std::min(rows, kMaxRowBlocks);
  return p;
}

QuantKind quant_kind(DType t) {
  switch (t) {
    case DType::i8: return kQuantInt8;
    case DType::e4m3fn: return kQuantE4m3fn;
    case DType::e4m3fnuz: return kQuantE4m3fnuz;
    default: return kQuantE5m2;
  }
}

// A grid of (column blocks, rows): one chunk of a row per thread.
aiter_status launch_gated(const ActivationArgs &a, ActKind act, const GpuCall &call) {
  ActivationParams p = params_of(a, a.out_rows.rows);
  p.act = act;
  if (p.rows == 0 || p.cols == 0) return AITER_OK;
  const int64_t per_vector = 16 / dtype_size(a.dtype);
  const bool vec = can_vectorize(a, per_vector, dtype_size(a.dtype));
  const int64_t chunks = vec ? p.cols / per_vector : p.cols;
  // Smaller blocks while there are too few to fill the GPU: a single row of 14336
  // columns then spreads over 28 blocks rather than 7.
  int64_t threads = std::min(kGatedThreads, round_up(chunks, kMinThreads));
  while (threads > kMinThreads && p.rows * ceil_div(chunks, threads) < kBusyBlocks) threads /= 2;
  const int64_t column_blocks = ceil_div(chunks, threads);
  if (column_blocks > INT32_MAX)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "gated activation on the GPU: rows of %lld elements are too long",
                (long long)p.cols);
  const std::string variant = std::string(dtype_tag(a.dtype)) + (vec ? ".vec" : ".scalar");
  return launch(call, "gated", variant, Dim3{unsigned(column_blocks), unsigned(p.row_step), 1}, unsigned(threads),
                p);
}

}  // namespace

aiter_status silu_and_mul(const ActivationArgs &a, const GpuCall &call) { return launch_gated(a, kActSilu, call); }

aiter_status gelu_and_mul(const ActivationArgs &a, const GpuCall &call) {
  return launch_gated(a, a.approx == AITER_GELU_TANH ? kActGeluTanh : kActGeluExact, call);
}

// One block per row, rows counted by their scales: a row of d = 0 still gets scale 1.
// Rows that fit kQuantChunks chunks a thread are read once (.vec); longer rows and
// rows that are not 16-byte chunks are read twice (.vec.long, .scalar).
aiter_status silu_and_mul_quant(const ActivationArgs &a, const GpuCall &call) {
  ActivationParams p = params_of(a, a.scale_count);
  p.quant = quant_kind(a.quant_dtype);
  if (p.rows == 0) return AITER_OK;
  const int64_t per_vector = 16 / dtype_size(a.dtype);
  const bool vec = can_vectorize(a, per_vector, 1);
  const int64_t chunks = vec ? p.cols / per_vector : p.cols;
  const bool cached = vec && chunks <= kQuantThreads * kQuantChunks;
  // Blocks no bigger than the row needs, so that small rows leave room for several
  // blocks per SM, one block's loads overlapping another's reduction.  With fewer
  // rows than SMs, one chunk a thread where the block allows: a thread's chunks
  // load one after the other (the kernel keeps the products in its 64 registers),
  // so four a thread made a single row of 4096 four trips to memory.
  int sms = 0;
  aiter_status s = multiprocessors(call, &sms);
  if (s != AITER_OK) return s;
  const int64_t per_thread =
      !cached ? 1 : p.rows < sms ? std::max<int64_t>(1, ceil_div(chunks, kQuantThreads)) : kQuantChunks;
  const int64_t threads = std::clamp(round_up(ceil_div(chunks, per_thread), kMinThreads), kMinThreads, kQuantThreads);
  const std::string variant = std::string(dtype_tag(a.dtype)) + (cached ? ".vec" : vec ? ".vec.long" : ".scalar");
  return launch(call, "silu_and_mul_quant", variant, Dim3{unsigned(p.row_step), 1, 1}, unsigned(threads), p);
}

}  // namespace gpu
}  // namespace aiter
