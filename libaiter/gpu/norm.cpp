// GPU launchers of the norm kernels (kernels/norm/norm.cu): one block per row.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>

#include "gpu/launch.hpp"
#include "kernels/common/quant_kind.h"
#include "kernels/norm/norm_params.h"
#include "ops/norm.hpp"

namespace aiter {
namespace gpu {
namespace {


QuantKind quant_kind(DType t) {
  switch (t) {
    case DType::i8: return kQuantInt8;
    case DType::e4m3fn: return kQuantE4m3fn;
    case DType::e4m3fnuz: return kQuantE4m3fnuz;
    case DType::e5m2: return kQuantE5m2;
    default: return kQuantNone;
  }
}

// Rows of no elements still get a scale of 1, as on the CPU.
aiter_status fill_scales(const NormArgs &a, int64_t rows, const GpuCall &call) {
  return memset_u32(call, a.scale, 0x3f800000u, size_t(rows));  // the bits of 1.0f
}

bool aligned16(const void *p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The 16-byte variant needs whole vectors in every row and aligned row starts.
bool can_vectorize(const NormArgs &a, const NormParams &p, int per_vector) {
  const bool strides_ok = p.x_stride % per_vector == 0 && p.out_stride % per_vector == 0 &&
                          (p.kind != kNormAddRms ||
                           (p.residual_stride % per_vector == 0 && p.residual_out_stride % per_vector == 0));
  return a.x_rows.cols % per_vector == 0 && strides_ok && aligned16(p.x) && aligned16(p.out) &&
         aligned16(p.residual) && aligned16(p.residual_out) && aligned16(p.weight) && aligned16(p.bias);
}

// The kernel variant and block size for `rows` rows of `chunks` chunks each.
// Many rows: the smallest register tile R (chunks per thread) that covers a row
// with at most 256 threads (512 for LayerNorm's R = 2), weights loaded after the reduction (fewest
// registers, so the most blocks per SM).  Few rows (under two per SM): one chunk
// per thread, up to 1024 threads, weights loaded with x, for latency.  Rows too
// long for either take the 1024-thread R = 4 variant.
struct Shape {
  std::string variant;
  unsigned threads = 0;
};

// The suffix of the variants specialized per kind ("vec.r2.*" -> "vec.r2.rms_q").
const char *kind_suffix(NormKind kind, bool quantized) {
  switch (kind) {
    case kNormAddRms: return quantized ? "add_q" : "add";
    case kNormLayer: return "layer";
    default: return quantized ? "rms_q" : "rms";
  }
}

Shape pick_shape(int64_t rows, int64_t chunks, bool vec, int multiprocessors, const char *kind) {
  struct Option { const char *name; int r; int64_t max_threads; };
  static const Option few_rows[] = {{"vec.r1.t1024.prefetch.*", 1, 1024}, {"vec.r4.t1024", 4, 1024}};
  // One chunk per thread for many rows too was measured slower (16384 x 4096
  // bf16 on an H100: 139 us against 110 us for R = 2 with 256 threads).
  static const Option many_rows[] = {{"vec.r2.*", 2, 256}, {"vec.r4.*", 4, 256}, {"vec.r8", 8, 256},
                                     {"vec.r4.t1024", 4, 1024}};
  // LayerNorm holds more per chunk (two reductions, weight and bias): R = 2 with
  // up to 512 threads before R = 4 (at R = 4 its kernel needs 113 registers).
  static const Option many_rows_layer[] = {{"vec.r2.*", 2, 512}, {"vec.r4.*", 4, 256}, {"vec.r8", 8, 256},
                                           {"vec.r4.t1024", 4, 1024}};
  static_assert(std::size(many_rows_layer) == std::size(many_rows));
  static const Option scalar[] = {{"scalar.r8.t1024", 8, 1024}};
  const bool few = rows < 2 * int64_t(multiprocessors);
  const bool layer = std::strcmp(kind, "layer") == 0;
  const Option *options = !vec ? scalar : few ? few_rows : layer ? many_rows_layer : many_rows;
  const size_t count = !vec ? std::size(scalar) : few ? std::size(few_rows) : std::size(many_rows);
  for (size_t i = 0; i < count; ++i) {
    const Option &o = options[i];
    const int64_t threads = ((chunks + o.r - 1) / o.r + 31) / 32 * 32;
    if (threads > o.max_threads) continue;
    std::string name = o.name;
    if (name.back() == '*') name.replace(name.size() - 1, 1, kind);
    return Shape{name, unsigned(threads)};
  }
  return Shape{};
}

aiter_status launch_norm(const NormArgs &a, NormKind kind, const GpuCall &call) {
  NormParams p{};
  p.x = a.x;
  p.residual = a.residual;
  p.residual_out = a.residual_out;
  p.weight = a.weight;
  p.bias = a.bias;
  p.out = a.out;
  p.rows = a.x_rows.rows;
  p.cols = a.x_rows.cols;
  p.x_stride = a.x_rows.row_stride;
  p.residual_stride = a.residual_rows.row_stride;
  p.residual_out_stride = a.residual_out_rows.row_stride;
  p.out_stride = a.out_rows.row_stride;
  p.eps = a.epsilon;
  p.kind = kind;
  p.params_f32 = a.param_dtype == DType::f32 && a.dtype != DType::f32;
  p.quant = quant_kind(a.quant_dtype);
  p.scale_out = a.scale;
  p.scale_stride = 1;
  if (p.rows == 0 || p.cols == 0) return p.cols == 0 && a.scale ? fill_scales(a, a.scale_count, call) : AITER_OK;
  p.inv_cols = 1.0f / float(p.cols);

  const int per_vector = 16 / dtype_size(a.dtype);
  const bool vec = can_vectorize(a, p, per_vector);
  int sms = 0;
  const aiter_status s = multiprocessors(call, &sms);
  if (s != AITER_OK) return s;
  const Shape shape =
      pick_shape(p.rows, vec ? p.cols / per_vector : p.cols, vec, sms, kind_suffix(kind, p.quant != kQuantNone));
  if (shape.threads == 0)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE,
                "norm on the GPU: rows of %lld elements are too long (at most %d, or %d for rows that are not a "
                "whole number of 16-byte vectors or not 16-byte aligned)",
                (long long)p.cols, 1024 * 4 * per_vector, 1024 * 8);
  return launch(call, "norm", std::string(dtype_tag(a.dtype)) + "." + shape.variant, Dim3{unsigned(p.rows), 1, 1},
                shape.threads, p);
}

}  // namespace

aiter_status rmsnorm(const NormArgs &a, const GpuCall &call) { return launch_norm(a, kNormRms, call); }
aiter_status add_rmsnorm(const NormArgs &a, const GpuCall &call) { return launch_norm(a, kNormAddRms, call); }
aiter_status layernorm(const NormArgs &a, const GpuCall &call) { return launch_norm(a, kNormLayer, call); }
aiter_status rmsnorm_quant(const NormArgs &a, const GpuCall &call) { return launch_norm(a, kNormRms, call); }
aiter_status add_rmsnorm_quant(const NormArgs &a, const GpuCall &call) { return launch_norm(a, kNormAddRms, call); }

}  // namespace gpu
}  // namespace aiter
