#include "cpu/gemm_plan.hpp"

#include <algorithm>
#include <cstring>

#include "core/parallel.hpp"

namespace aiter {
namespace cpu {
namespace gemm {
namespace {

// ---- operands as fp32 rows ------------------------------------------------------
// fp16 to fp32 with bit masks instead of branches, so that gcc vectorizes whole
// rows (the library's to_f32(half_t) is out of line and branches): normal
// numbers only need their exponent rebiased, inf / NaN get the top exponent,
// subnormals are their mantissa times 2^-24 (an exact int-to-float conversion).
inline float half_to_f32(uint16_t h) {
  const uint32_t magnitude = h & 0x7fffu;
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t special = 0u - uint32_t(magnitude >= 0x7c00u);  // all ones for inf / NaN
  const uint32_t normal = (magnitude << 13) + (112u << 23) + (special & (112u << 23));
  const uint32_t subnormal = f32_to_bits(float(int32_t(magnitude)) * 0x1p-24f);
  const uint32_t is_normal = 0u - uint32_t(magnitude >= 0x400u);
  return bits_to_f32((normal & is_normal) | (subnormal & ~is_normal) | sign);
}

inline float element_to_f32(int8_t x) { return float(x); }
inline float element_to_f32(half_t x) { return half_to_f32(x.bits); }
template <class T>
inline float element_to_f32(T x) { return to_f32(x); }

template <class T>
void convert_row(const void *src, int64_t n, float *dst) {
  const T *s = static_cast<const T *>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = element_to_f32(s[i]);
}

RowConverter converter_for(DType dt) {
  switch (dt) {
    case DType::f16: return convert_row<half_t>;
    case DType::bf16: return convert_row<bf16_t>;
    case DType::i8: return convert_row<int8_t>;
    case DType::e4m3fn: return convert_row<e4m3fn_t>;
    case DType::e4m3fnuz: return convert_row<e4m3fnuz_t>;
    case DType::e5m2: return convert_row<e5m2_t>;
    default: return nullptr;  // fp32: read in place
  }
}

Operand operand(const MatrixRef &m, int64_t batch_stride, DType dt) {
  const int64_t size = dtype_size(dt);
  return Operand{static_cast<const char *>(m.data), m.row_stride * size, batch_stride * size, size, dt,
                 converter_for(dt)};
}

// Multiplies row[0, kc), which holds columns [k0, k0 + kc), by the scale of
// each K group it covers.
void scale_groups(const Operand &op, int64_t r, int64_t k0, int64_t kc, float *row) {
  for (int64_t k = 0; k < kc;) {
    const int64_t group = (k0 + k) / kScaleBlock;
    const int64_t end = std::min(kc, (group + 1) * kScaleBlock - k0);
    const float s = op.group_scale(r, group);
    for (; k < end; ++k) row[k] *= s;
  }
}

// ---- the store -------------------------------------------------------------------
template <class O>
void write_row(const float *src, int64_t n, void *dst) {
  O *out = static_cast<O *>(dst);
  for (int64_t i = 0; i < n; ++i) out[i] = from_f32<O>(src[i]);
}

RowWriter writer_for(DType dt) {
  return visit_float(dt, [](auto tag) -> RowWriter { return write_row<decltype(tag)>; });
}

std::vector<float> bias_f32(const GemmArgs &g) {
  std::vector<float> bias;
  if (g.bias == nullptr) return bias;
  bias.resize(size_t(g.n));
  visit_float(g.bias_dtype, [&](auto tag) {
    const auto *b = static_cast<const decltype(tag) *>(g.bias);
    for (int64_t i = 0; i < g.n; ++i) bias[size_t(i)] = to_f32(b[i]);
  });
  return bias;
}

}  // namespace

Plan make_plan(const GemmArgs &g, std::vector<float> &bias) {
  bias = bias_f32(g);
  Plan p{};
  p.batch = g.batch, p.m = g.m, p.n = g.n, p.k = g.k;
  p.a = operand(g.a, g.a_batch_stride, g.in_dtype);
  p.w = operand(g.w, g.w_batch_stride, g.in_dtype);
  p.int8 = g.in_dtype == DType::i8;
  const int64_t out_size = dtype_size(g.out_dtype);
  p.out = static_cast<char *>(g.out);
  p.out_row_bytes = g.out_row_stride * out_size;
  p.out_batch_bytes = g.out_batch_stride * out_size;
  p.out_elem_bytes = out_size;
  p.write = writer_for(g.out_dtype);
  p.out_dtype = g.out_dtype;
  p.bias = bias.empty() ? nullptr : bias.data();
  if (g.block_scaled) {
    const int64_t groups = (g.k + kScaleBlock - 1) / kScaleBlock;
    p.a.group_scales = g.a_scale, p.a.rows_per_scale = 1;
    p.a.scale_row_stride = g.a_scale_row_stride, p.a.scale_group_stride = g.a_scale_group_stride;
    p.w.group_scales = g.w_scale, p.w.rows_per_scale = kScaleBlock, p.w.scale_row_stride = groups;
    return p;
  }
  p.a_scale = g.a_scale, p.a_scale_step = g.a_scale_per_token ? 1 : 0, p.a_scale_batch = g.a_scale_batch_stride;
  p.w_scale = g.w_scale, p.w_scale_step = g.w_scale_per_channel ? 1 : 0, p.w_scale_batch = g.w_scale_batch_stride;
  return p;
}

const float *fp32_rows(const Operand &op, int64_t b, int64_t row0, int64_t rows, int64_t k0, int64_t kc,
                       float *scratch, int64_t scratch_ld, bool fold_group_scales, int64_t *ld) {
  if (op.convert == nullptr) {
    *ld = op.row_bytes / int64_t(sizeof(float));
    return reinterpret_cast<const float *>(op.row(b, row0) + k0 * op.elem_bytes);
  }
  *ld = scratch_ld;
  for (int64_t r = 0; r < rows; ++r) {
    float *dst = scratch + r * scratch_ld;
    op.convert(op.row(b, row0 + r) + k0 * op.elem_bytes, kc, dst);
    if (fold_group_scales && op.group_scales != nullptr) scale_groups(op, row0 + r, k0, kc, dst);
  }
  return scratch;
}

template <class Acc>
void store_tile(const Plan &p, int64_t b, int64_t m0, int64_t rows, int64_t n0, int64_t cols, const Acc *acc,
                int64_t ld) {
  constexpr int64_t kChunk = 256;  // columns rounded per writer call
  float row[kChunk];
  const float *w_scale = p.w_scale ? p.w_scale + b * p.w_scale_batch : nullptr;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t m = m0 + i;
    char *out = p.out + b * p.out_batch_bytes + m * p.out_row_bytes + n0 * p.out_elem_bytes;
    const float a_scale = p.a_scale ? p.a_scale[b * p.a_scale_batch + m * p.a_scale_step] : 1.0f;
    for (int64_t j0 = 0; j0 < cols; j0 += kChunk) {
      const int64_t count = std::min(kChunk, cols - j0);
      for (int64_t j = 0; j < count; ++j) {
        const int64_t n = n0 + j0 + j;
        float v = float(acc[i * ld + j0 + j]);
        if (w_scale) v = v * a_scale * w_scale[n * p.w_scale_step];
        if (p.bias) v += p.bias[n];
        row[j] = v;
      }
      p.write(row, count, out + j0 * p.out_elem_bytes);
    }
  }
}

template void store_tile(const Plan &, int64_t, int64_t, int64_t, int64_t, int64_t, const float *, int64_t);
template void store_tile(const Plan &, int64_t, int64_t, int64_t, int64_t, int64_t, const int64_t *, int64_t);
template void store_tile(const Plan &, int64_t, int64_t, int64_t, int64_t, int64_t, const int32_t *, int64_t);

// Items (output tiles) are few and long: up to this many chunks, so that the
// threads end together (one item each up to here).
constexpr int64_t kMaxChunks = 256;

void for_each_item(const Plan &p, int64_t items, const std::function<void(int64_t b, int64_t item)> &fn) {
  parallel_for(p.batch * items, 1, kMaxChunks, [&](int64_t begin, int64_t end) {
    for (int64_t index = begin; index < end; ++index) fn(index / items, index % items);
  });
}

void for_each_tile(const Plan &p, int64_t tile_m, int64_t tile_n,
                   void (*fn)(const Plan &p, int64_t b, int64_t m0, int64_t rows, int64_t n0, int64_t cols)) {
  const int64_t tiles_m = (p.m + tile_m - 1) / tile_m;
  const int64_t tiles_n = (p.n + tile_n - 1) / tile_n;
  for_each_item(p, tiles_m * tiles_n, [&](int64_t b, int64_t tile) {
    const int64_t m0 = (tile % tiles_m) * tile_m, n0 = (tile / tiles_m) * tile_n;
    fn(p, b, m0, std::min(tile_m, p.m - m0), n0, std::min(tile_n, p.n - n0));
  });
}

}  // namespace gemm
}  // namespace cpu
}  // namespace aiter
