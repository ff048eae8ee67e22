// Launchers of the custom all-reduce kernels (kernels/allreduce/allreduce.cu).
#include <algorithm>
#include <cstdint>
#include <string>

#include "dist/custom_ar.hpp"
#include "gpu/launch.hpp"
#include "kernels/common/quant_kind.h"

namespace aiter {
namespace gpu {
namespace {

constexpr unsigned kThreads = 512;
// The push kernel: smaller blocks spread a small message over more multiprocessors,
// each with its own stores in flight to the peers.
constexpr unsigned kPushThreads = 256;

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Blocks of one launch: enough for one vector a thread, at most one a
// multiprocessor, so that every block is resident at once: a block waits for
// the same block of the peers, and all must run for any to finish.
aiter_status blocks_for(const aiter_custom_ar &ar, int64_t work, unsigned threads, unsigned *blocks) {
  int sms = 0;
  const aiter_status s = multiprocessors(GpuCall{ar.device, nullptr}, &sms);
  if (s != AITER_OK) return s;
  const int64_t wanted = std::max<int64_t>(1, (work + threads - 1) / threads);
  *blocks = unsigned(std::min<int64_t>({wanted, sms, kArMaxBlocks}));
  return AITER_OK;
}

void fill_buffers(const aiter_custom_ar &ar, char *(&bufs)[kArMaxRanks]) {
  for (int r = 0; r < kArMaxRanks; ++r) bufs[r] = r < ar.world ? ar.bufs[r] : ar.bufs[ar.rank];
}

PushLayout push_layout(const aiter_custom_ar &ar) {
  return PushLayout{(long long)push_area_offset(ar), (long long)ar.push_slot_bytes};
}

const char *kernel_name(ArKernel k) {
  return k == ArKernel::push ? ".push" : k == ArKernel::one_shot ? ".one_shot" : ".two_shot";
}

QuantKind quant_kind(DType t) {
  switch (t) {
    case DType::i8: return kQuantInt8;
    case DType::e4m3fn: return kQuantE4m3fn;
    case DType::e4m3fnuz: return kQuantE4m3fnuz;
    case DType::e5m2: return kQuantE5m2;
    default: return kQuantNone;
  }
}

}  // namespace

aiter_status custom_all_reduce(const aiter_custom_ar &ar, void *out, const void *x, int64_t n, DType dtype,
                               ArKernel kernel, void *stream) {
  if (n == 0) return AITER_OK;
  const int per_vector = 16 / dtype_size(dtype);
  const int64_t units = (n + per_vector - 1) / per_vector;
  AllReduceParams p{};
  fill_buffers(ar, p.bufs);
  p.x = x;
  p.out = out;
  p.n = n;
  p.shard_units = (units + ar.world - 1) / ar.world;
  p.reduced_offset = kArDataOffset + int64_t(ar.area_bytes);
  p.push = push_layout(ar);
  p.rank = ar.rank;
  p.world = ar.world;
  p.x_aligned = aligned16(x);
  p.out_aligned = aligned16(out);
  unsigned blocks = 0;
  const bool two_shot = kernel == ArKernel::two_shot;
  const unsigned threads = kernel == ArKernel::push ? kPushThreads : kThreads;
  const aiter_status s = blocks_for(ar, two_shot ? p.shard_units : units, threads, &blocks);
  if (s != AITER_OK) return s;
  const std::string variant = std::string(dtype_tag(dtype)) + kernel_name(kernel);
  return launch(GpuCall{ar.device, stream}, "allreduce", variant, Dim3{blocks, 1, 1}, threads, p);
}

bool custom_all_reduce_norm_fits(const aiter_custom_ar &ar, const ArNormArgs &a) {
  const int per_vector = 16 / dtype_size(a.dtype);
  const size_t bytes = size_t(a.rows * a.cols) * size_t(dtype_size(a.dtype));
  return a.cols > 0 && a.cols % per_vector == 0 && a.cols / per_vector <= 1024 && bytes <= ar.push_max_bytes &&
         aligned16(a.x) && aligned16(a.residual) && aligned16(a.residual_out) && aligned16(a.out) &&
         aligned16(a.weight);
}

aiter_status custom_all_reduce_norm(const aiter_custom_ar &ar, const ArNormArgs &a, bool two_shot, void *stream) {
  if (a.rows == 0) return AITER_OK;
  AllReduceNormParams p{};
  fill_buffers(ar, p.bufs);
  p.push = push_layout(ar);
  p.x = a.x;
  p.residual = a.residual;
  p.residual_out = a.residual_out;
  p.weight = a.weight;
  p.out = a.out;
  p.scale_out = a.scale;
  p.rows = a.rows;
  p.cols = a.cols;
  p.eps = a.epsilon;
  p.inv_cols = 1.0f / float(a.cols);
  p.rank = ar.rank;
  p.world = ar.world;
  p.params_f32 = a.weight_dtype == DType::f32 && a.dtype != DType::f32;
  p.quant = quant_kind(a.quant_dtype);
  // The block of the norm's few-rows kernel: a 16-byte chunk a thread, whole warps.
  const int64_t chunks = a.cols / (16 / dtype_size(a.dtype));
  const unsigned threads = unsigned((chunks + 31) / 32 * 32);
  unsigned blocks = 0;
  const aiter_status s = blocks_for(ar, a.rows, 1, &blocks);
  if (s != AITER_OK) return s;
  const std::string variant = std::string(dtype_tag(a.dtype)) + (two_shot ? ".two_shot" : "");
  return launch(GpuCall{ar.device, stream}, "allreduce_norm", variant, Dim3{blocks, 1, 1}, threads, p);
}

}  // namespace gpu
}  // namespace aiter
