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
constexpr int64_t kLoadsFirstThreads = 256;  // the .vec.loads_first kernels' launch bound
constexpr int64_t kScalarRun = 4;        // elements a thread of the .scalar gated kernels, blockDim apart

constexpr int64_t kMinThreads = 64;       // one AMD wavefront, two NVIDIA warps
constexpr int64_t kMaxRowBlocks = 65535;  // grid extent over rows (CUDA's limit for y); kernels loop past it
constexpr int64_t kBusyBlocks = 1024;     // enough blocks to keep every SM of a large GPU busy
constexpr int64_t kNarrowGeluChunks = 32768;  // 16-byte chunks of x's gate half up to which exact GELU takes 2 elements

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }
bool aligned(const void *p, int64_t bytes) { return reinterpret_cast<uintptr_t>(p) % uintptr_t(bytes) == 0; }

// The vector kernels read chunks of N elements of the gate and the up half in one
// access each, so d and x's row stride must be multiples of N and x aligned to a
// chunk; they write chunks of N elements of out (`out_size` bytes each) the same way.
bool can_vectorize(const ActivationArgs &a, int64_t per_vector, int64_t out_size) {
  return a.out_rows.cols % per_vector == 0 && a.x_rows.row_stride % per_vector == 0 &&
         a.out_rows.row_stride % per_vector == 0 && aligned(a.x, per_vector * dtype_size(a.dtype)) &&
         aligned(a.out, per_vector * out_size);
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

// The gated kernels' chunk: 16 bytes where x and out allow it, else 2 elements
// where they allow that, else kScalarRun single elements a block's width apart.
// An exact GELU (two polynomials and an exp an element) on few rows takes 2
// elements even where 16 bytes would do: with 8 a thread its arithmetic ran 8
// deep on a few SMs.  Measured on an H100 (bf16,
// graph replay, in turns): 1 x 4096 5.5 -> 5.2-5.4 us, 64 x 4096 6.1 -> 5.9 us,
// but from 64 x 8192 on 16 bytes were faster again; SiLU and the tanh GELU
// gained nothing from 2 elements at any size, and 2 elements beat 1 for all three
// (SiLU 64 x 8192 6.2-6.8 against 7.7-8.1 us).
struct GatedChunk {
  int64_t elements;
  const char *tag;
};

GatedChunk gated_chunk(const ActivationArgs &a, ActKind act, int64_t rows) {
  const int64_t size = dtype_size(a.dtype), wide = 16 / size;
  const bool few_rows = rows * (a.out_rows.cols / wide) <= kNarrowGeluChunks;
  if (can_vectorize(a, wide, size) && !(act == kActGeluExact && few_rows)) return {wide, ".vec"};
  if (can_vectorize(a, 2, size)) return {2, ".vec2"};
  return {kScalarRun, ".scalar"};
}

// A grid of (column blocks, rows): one chunk of a row per thread.
aiter_status launch_gated(const ActivationArgs &a, ActKind act, const GpuCall &call) {
  ActivationParams p = params_of(a, a.out_rows.rows);
  p.act = act;
  if (p.rows == 0 || p.cols == 0) return AITER_OK;
  const GatedChunk chunk = gated_chunk(a, act, p.rows);
  const int64_t chunks = ceil_div(p.cols, chunk.elements);  // exact but for .scalar's last run
  // Smaller blocks while there are too few to fill the GPU: a single row of 14336
  // columns then spreads over 28 blocks rather than 7.
  int64_t threads = std::min(kGatedThreads, round_up(chunks, kMinThreads));
  while (threads > kMinThreads && p.rows * ceil_div(chunks, threads) < kBusyBlocks) threads /= 2;
  const int64_t column_blocks = ceil_div(chunks, threads);
  if (column_blocks > INT32_MAX)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "gated activation on the GPU: rows of %lld elements are too long",
                (long long)p.cols);
  const std::string variant = std::string(dtype_tag(a.dtype)) + chunk.tag;
  return launch(call, "gated", variant, Dim3{unsigned(column_blocks), unsigned(p.row_step), 1}, unsigned(threads),
                p);
}

}  // namespace

aiter_status silu_and_mul(const ActivationArgs &a, const GpuCall &call) { return launch_gated(a, kActSilu, call); }

aiter_status gelu_and_mul(const ActivationArgs &a, const GpuCall &call) {
  return launch_gated(a, a.approx == AITER_GELU_TANH ? kActGeluTanh : kActGeluExact, call);
}

// One block per row, rows counted by their scales: a row of d = 0 still gets scale 1.
// Rows that fit kQuantChunks chunks a thread are read once (.vec, or with at least
// as many rows as SMs and blocks of up to 256 threads .vec.loads_first, whose
// thread issues its loads all at once); longer rows and rows that are not 16-byte
// chunks are read twice (.vec.long, .scalar).
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
  const bool loads_first = cached && p.rows >= sms && threads <= kLoadsFirstThreads;
  const char *read = loads_first ? ".vec.loads_first" : cached ? ".vec" : vec ? ".vec.long" : ".scalar";
  const std::string variant = std::string(dtype_tag(a.dtype)) + read;
  return launch(call, "silu_and_mul_quant", variant, Dim3{unsigned(p.row_step), 1, 1}, unsigned(threads), p);
}

}  // namespace gpu
}  // namespace aiter
