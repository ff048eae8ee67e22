// aiter_custom_all_reduce and its fusions with add + RMSNorm (+ quantization):
// argument checks, then the algorithm for the message size.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "aiter/norm.h"
#include "core/error.hpp"
#include "dist/comm.hpp"
#include "dist/custom_ar.hpp"

namespace aiter {
namespace dist {
namespace {

// The algorithm by message size.  The push kernel (no barrier) up to its areas'
// size (ar->push_max_bytes, 2 MiB at most); past it the pull kernels, from the
// forced one-shot / two-shot columns of benchmarks/bench_allreduce.py against
// NCCL in the same run (bf16, H100 x4 with NVLink, CUDA graphs, 2026-11-27;
// docs/performance_allreduce.md): one-shot (every rank reads world x bytes) up
// to one_shot_limit: two ranks read no more in one shot than in two (2 ranks,
// 4 MB: one-shot 22.3 us, two-shot 25.0); four ranks: 2 MB one-shot 31.3 against
// two-shot 28.7.  Two-shot past it up to kCustomLimit (and max_bytes); NCCL past
// that (4 ranks, 16 MB: NCCL 110 us, two-shot 118).  Eight ranks were not
// measured: their limits are a guess.
constexpr size_t kMiB = size_t(1) << 20;
constexpr size_t kCustomLimit = 8 * kMiB;
size_t one_shot_limit(int world) { return world <= 2 ? kCustomLimit : world <= 4 ? kMiB : kMiB / 4; }

gpu::ArKernel kernel_for(const aiter_custom_ar *ar, size_t bytes, int32_t algo) {
  if (algo == AITER_AR_TWO_SHOT) return gpu::ArKernel::two_shot;
  if (bytes <= ar->push_max_bytes) return gpu::ArKernel::push;
  if (algo == AITER_AR_ONE_SHOT || bytes <= one_shot_limit(ar->world)) return gpu::ArKernel::one_shot;
  return gpu::ArKernel::two_shot;
}

// The fused kernel: one shot (every rank sends its rows to every peer) or two
// (each row summed by one rank, then sent back to the peers: 2 (W - 1) / W of the
// rows' bytes sent a rank instead of W - 1 times, and one more hop).  Two shots
// from 4 ranks and 1 MiB (64 tokens of 8192 bf16: 3 MiB a rank in one shot),
// the choice the 4-GPU tests ran; the forced columns of the benchmark show two
// shots faster from 256 KiB already (docs/performance_allreduce.md).
// AITER_AR_FUSED=one_shot or two_shot forces one (benchmarks/bench_allreduce.py
// times both).
bool fused_two_shot(const aiter_custom_ar *ar, size_t bytes) {
  static const int forced = [] {
    const char *env = std::getenv("AITER_AR_FUSED");
    if (env == nullptr) return 0;
    return std::strcmp(env, "two_shot") == 0 ? 2 : std::strcmp(env, "one_shot") == 0 ? 1 : 0;
  }();
  if (forced != 0) return forced == 2;
  return ar->world >= 4 && bytes >= kMiB;
}

// A tensor on the custom all-reduce's device (contiguous).
void check_on_ar(ArgCheck &c, const aiter_custom_ar *ar, const DLTensor *t, const char *name) {
  c.tensor(t, name);
  if (!c.ok()) return;
  c.contiguous(t, name);
  c.require(t->device.device_type == ar->device.device_type && t->device.device_id == ar->device.device_id,
            AITER_ERR_INVALID_ARGUMENT, "%s: expected a tensor on the all-reduce's device (type %d id %d), got type %d id %d",
            name, int(ar->device.device_type), int(ar->device.device_id), int(t->device.device_type),
            int(t->device.device_id));
}

void check_ready(ArgCheck &c, const aiter_custom_ar *ar) {
  c.require(ar != nullptr, AITER_ERR_INVALID_ARGUMENT, "ar: expected a custom all-reduce, got NULL");
  if (c.ok())
    c.require(ar->peers_open, AITER_ERR_INVALID_ARGUMENT,
              "ar: the peers' buffers are not open (aiter_custom_ar_open_peers, or create it with a communicator)");
}

aiter_status reduce(aiter_custom_ar *ar, void *out, const void *x, int64_t n, DType dtype, int32_t algo,
                    void *stream) {
  const size_t bytes = size_t(n) * size_t(dtype_size(dtype));
  if (algo == AITER_AR_AUTO && bytes > std::min(ar->max_bytes, kCustomLimit)) algo = AITER_AR_NCCL;
  if (algo == AITER_AR_NCCL) {
    if (ar->comm == nullptr)
      return fail(AITER_ERR_UNSUPPORTED_SHAPE,
                  "x: %zu bytes need NCCL (more than max_bytes %zu, or algo NCCL), but the all-reduce has no communicator",
                  bytes, ar->max_bytes);
    return nccl_all_reduce(ar->comm, out, x, size_t(n), dtype, stream);
  }
  if (bytes > ar->max_bytes)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "x: %zu bytes exceed the buffers' max_bytes %zu for algo %d", bytes,
                ar->max_bytes, int(algo));
  return gpu::custom_all_reduce(*ar, out, x, n, dtype, kernel_for(ar, bytes, algo), stream);
}

// The fused ops' tensors: x, residual, residual_out [..., H] of one float dtype,
// out x's shape (x's dtype, or 8-bit when quantized), weight [H], scale [..., 1].
void check_norm(ArgCheck &c, aiter_custom_ar *ar, gpu::ArNormArgs &a, DLTensor *out, DLTensor *scale,
                DLTensor *residual_out, const DLTensor *x, const DLTensor *residual, const DLTensor *weight,
                float epsilon) {
  check_ready(c, ar);
  if (!c.ok()) return;
  check_on_ar(c, ar, x, "x");
  check_on_ar(c, ar, residual, "residual");
  check_on_ar(c, ar, residual_out, "residual_out");
  check_on_ar(c, ar, out, "out");
  check_on_ar(c, ar, weight, "weight");
  if (scale != nullptr) check_on_ar(c, ar, scale, "scale");
  if (!c.ok()) return;
  c.min_ndim(x, "x", 1).dtype(x, "x", {DType::f32, DType::f16, DType::bf16});
  c.same_shape(residual, "residual", x, "x").same_dtype(residual, "residual", x, "x");
  c.same_shape(residual_out, "residual_out", x, "x").same_dtype(residual_out, "residual_out", x, "x");
  c.same_shape(out, "out", x, "x");
  if (scale != nullptr) {
    c.dtype(out, "out", {DType::i8, DType::e4m3fn, DType::e4m3fnuz, DType::e5m2});
    c.ndim(scale, "scale", x->ndim).dtype(scale, "scale", {DType::f32});
    for (int d = 0; c.ok() && d + 1 < x->ndim; ++d) c.dim(scale, "scale", d, x->shape[d], "x's shape, last dim 1");
    c.dim(scale, "scale", -1, 1, "x's shape, last dim 1");
  } else {
    c.same_dtype(out, "out", x, "x");
  }
  if (!c.ok()) return;
  const int64_t hidden = x->shape[x->ndim - 1];
  c.ndim(weight, "weight", 1).dim(weight, "weight", 0, hidden, "the last dim of x");
  c.dtype(weight, "weight", {dtype_of(x->dtype), DType::f32});
  c.require(std::isfinite(epsilon) && epsilon >= 0.0f, AITER_ERR_INVALID_ARGUMENT,
            "epsilon: expected a finite value >= 0, got %g", double(epsilon));
  if (!c.ok()) return;
  a.dtype = dtype_of(x->dtype);
  a.weight_dtype = dtype_of(weight->dtype);
  a.quant_dtype = scale ? dtype_of(out->dtype) : DType::unknown;
  a.x = data_ptr<const void>(x);
  a.residual = data_ptr<const void>(residual);
  a.weight = data_ptr<const void>(weight);
  a.out = data_ptr<void>(out);
  a.residual_out = data_ptr<void>(residual_out);
  a.scale = scale ? data_ptr<float>(scale) : nullptr;
  a.cols = hidden;
  a.rows = hidden == 0 ? 0 : numel(x) / hidden;
  a.epsilon = epsilon;
}

// The sum into `sum` (a tensor of x's shape and dtype), then the norm op.
aiter_status unfused(aiter_custom_ar *ar, DLTensor *sum, DLTensor *out, DLTensor *scale, DLTensor *residual_out,
                     const DLTensor *x, const DLTensor *residual, const DLTensor *weight, float epsilon,
                     void *stream) {
  aiter_status s = reduce(ar, data_ptr<void>(sum), data_ptr<const void>(x), numel(x), dtype_of(x->dtype),
                          AITER_AR_AUTO, stream);
  if (s != AITER_OK) return s;
  s = scale ? aiter_add_rmsnorm_quant(out, scale, residual_out, sum, residual, weight, epsilon, stream)
            : aiter_add_rmsnorm(out, residual_out, sum, residual, weight, epsilon, stream);
  return s;
}

aiter_status fused(const char *op, DLTensor *out, DLTensor *scale, DLTensor *residual_out, const DLTensor *x,
                   const DLTensor *residual, const DLTensor *weight, float epsilon, aiter_custom_ar *ar,
                   void *stream) {
  ArgCheck c(op);
  gpu::ArNormArgs a{};
  check_norm(c, ar, a, out, scale, residual_out, x, residual, weight, epsilon);
  if (!c.ok()) return c.status();
  const size_t bytes = size_t(numel(x)) * size_t(dtype_size(a.dtype));
  if (gpu::custom_all_reduce_norm_fits(*ar, a))
    return gpu::custom_all_reduce_norm(*ar, a, fused_two_shot(ar, bytes), stream);
  if (scale == nullptr) return unfused(ar, out, out, nullptr, residual_out, x, residual, weight, epsilon, stream);
  // Quantized: the sum needs a tensor of x's dtype, the scratch buffer.
  if (bytes > ar->max_bytes)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE,
                "x: %zu bytes exceed max_bytes %zu (the quantizing fallback sums into a scratch buffer of that "
                "size); call aiter_all_reduce then aiter_add_rmsnorm_quant",
                bytes, ar->max_bytes);
  DLTensor sum = *x;
  sum.data = ar->scratch;
  sum.byte_offset = 0;
  sum.strides = nullptr;
  return unfused(ar, &sum, out, scale, residual_out, x, residual, weight, epsilon, stream);
}

}  // namespace
}  // namespace dist
}  // namespace aiter

using namespace aiter;

extern "C" AITER_API aiter_status aiter_custom_all_reduce(DLTensor *out, const DLTensor *x, int32_t algo,
                                                          aiter_custom_ar *ar, void *stream) {
  return guard("aiter_custom_all_reduce", [&] {
    ArgCheck c("aiter_custom_all_reduce");
    dist::check_ready(c, ar);
    if (c.ok()) dist::check_on_ar(c, ar, x, "x");
    if (c.ok()) dist::check_on_ar(c, ar, out, "out");
    if (!c.ok()) return c.status();
    c.dtype(x, "x", {DType::f32, DType::f16, DType::bf16}).same_dtype(out, "out", x, "x");
    c.same_shape(out, "out", x, "x");
    c.require(algo >= AITER_AR_AUTO && algo <= AITER_AR_NCCL, AITER_ERR_INVALID_ARGUMENT,
              "algo: expected 0 (auto), 1 (one-shot), 2 (two-shot) or 3 (NCCL), got %d", int(algo));
    if (!c.ok()) return c.status();
    return dist::reduce(ar, data_ptr<void>(out), data_ptr<const void>(x), numel(x), dtype_of(x->dtype), algo,
                        stream);
  });
}

extern "C" AITER_API aiter_status aiter_custom_all_reduce_add_rmsnorm(DLTensor *out, DLTensor *residual_out,
                                                                      const DLTensor *x, const DLTensor *residual,
                                                                      const DLTensor *weight, float epsilon,
                                                                      aiter_custom_ar *ar, void *stream) {
  const char *op = "aiter_custom_all_reduce_add_rmsnorm";
  return guard(op, [&] {
    return dist::fused(op, out, nullptr, residual_out, x, residual, weight, epsilon, ar, stream);
  });
}

extern "C" AITER_API aiter_status aiter_custom_all_reduce_add_rmsnorm_quant(
    DLTensor *out, DLTensor *scale, DLTensor *residual_out, const DLTensor *x, const DLTensor *residual,
    const DLTensor *weight, float epsilon, aiter_custom_ar *ar, void *stream) {
  const char *op = "aiter_custom_all_reduce_add_rmsnorm_quant";
  return guard(op, [&] {
    ArgCheck c(op);
    c.tensor(scale, "scale");
    if (!c.ok()) return c.status();
    return dist::fused(op, out, scale, residual_out, x, residual, weight, epsilon, ar, stream);
  });
}
