// CPU fused MoE, the same steps as the GPU kernels over the same workspace:
// sort the pairs by expert (moe_sorting), then per expert block: stage 1
// act(x w_gate) * (x w_up) rounded to the dtype, stage 2 that times w2 rounded
// to the dtype, per pair; then each token's k pair rows summed in fp32 in pair
// order.  Dot products in fp32.  With weights_on_input the input row is x[t]
// times the pair's weight (rounded to the dtype for 16-bit weights).  fp8
// weights: each stage's input row is quantized per row (dynamic scale), the
// products of the codes summed in fp32, then times the row and channel scales.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "cpu/quantize.hpp"
#include "ops/moe.hpp"

namespace aiter {
namespace cpu {
namespace {

float activate(int32_t act, float g) {
  if (act == AITER_MOE_ACT_SILU) return g / (1.0f + std::exp(-g));
  if (act == AITER_MOE_ACT_GELU) return 0.5f * g * (1.0f + std::erf(g * 0.70710678118654752f));
  const float u = 0.79788456080286536f * (g + 0.044715f * g * g * g);
  return 0.5f * g * (1.0f + std::tanh(u));
}

float dot(const float *a, const float *b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

template <class T>
void to_float(const T *src, int64_t n, float *dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = to_f32(src[i]);
}

// The fp32 input row of pair p (sorted row r): x[t], times its weight with weights_on_input.
template <class T>
void input_row(const FusedMoeArgs &a, int64_t p, float *row) {
  const int64_t t = p / a.topk;
  to_float(static_cast<const T *>(a.x) + t * a.x_stride, a.hidden, row);
  if (!a.weights_on_input) return;
  const float w = a.weights[t * a.weights_stride + p % a.topk];
  for (int64_t i = 0; i < a.hidden; ++i) row[i] *= w;
}

// row[0, n) quantized to Q with a dynamic scale, then back to the codes' values.
template <class Q>
float quantize_row(float *row, int64_t n, Q *codes) {
  float amax = 0.0f;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(row[i]));
  const float scale = scale_for(amax, qmax<Q>()), inv = 1.0f / scale;
  for (int64_t i = 0; i < n; ++i) {
    codes[i] = quantize<Q>(row[i] * inv);
    row[i] = to_f32(codes[i]);
  }
  return scale;
}

// Per group of `group` values (0: the whole row as one), scales[g] its scale.
template <class Q>
void quantize_groups(float *row, int64_t n, int64_t group, Q *codes, float *scales) {
  const int64_t size = group > 0 ? group : n;
  for (int64_t g = 0; g * size < n; ++g) scales[g] = quantize_row(row + g * size, std::min(size, n - g * size), codes + g * size);
}

// a . b over n values, in fp32: per group of 128 times scale(g) when block-scaled.
template <class Scale>
float scaled_dot(const float *a, const float *b, int64_t n, int32_t group, Scale scale) {
  if (group == 0) return dot(a, b, n) * scale(0);
  float total = 0.0f;
  for (int64_t g = 0; g * group < n; ++g) total += dot(a + g * group, b + g * group, group) * scale(g);
  return total;
}

// Rounds each value to T (16-bit weights: the GPU's rounding of a scaled input row).
template <class T>
void round_row(float *row, int64_t n) {
  for (int64_t i = 0; i < n; ++i) row[i] = to_f32(from_f32<T>(row[i]));
}

// Both stages for the rows of one expert block.  T: x / out / intermediates;
// W: the weights (T, or an fp8 type with per-channel scales).
template <class T, class W>
struct Block {
  static constexpr bool kFp8 = sizeof(W) == 1;
  const FusedMoeArgs &a;
  std::vector<float> w, row, h;

  explicit Block(const FusedMoeArgs &args)
      : a(args), row(size_t(std::max(args.hidden, args.inter))), h(size_t(args.inter)) {}

  int64_t groups(int64_t n) const { return a.group > 0 ? n / a.group : 1; }

  // Stage 1's input row r as fp32 (the codes for fp8, their scales in x_scale).
  void stage1_input(int64_t r, int64_t p) {
    input_row<T>(a, p, row.data());
    if constexpr (kFp8)
      quantize_groups(row.data(), a.hidden, a.group, static_cast<W *>(a.xq) + r * a.hidden,
                      a.x_scale + r * groups(a.hidden));
    else if (a.weights_on_input)
      round_row<T>(row.data(), a.hidden);
  }

  // The weight scale of output channel n of a matrix with k_total columns and
  // n_rows rows an expert, for K group g.
  float weight_scale(const float *scales, int64_t e, int64_t n, int64_t n_rows, int64_t k_total, int64_t g) const {
    if (a.group == 0) return scales[e * n_rows + n];
    return scales[(e * (n_rows / a.group) + n / a.group) * (k_total / a.group) + g];
  }

  void stage1(int64_t e, int64_t first) {
    const int64_t pairs = a.tokens * a.topk, H = a.hidden, I = a.inter;
    w.resize(size_t(std::max(2 * I * H, H * I)));
    to_float(static_cast<const W *>(a.w1) + e * 2 * I * H, 2 * I * H, w.data());
    for (int64_t r = first; r < first + a.sort.block; ++r) {
      const int64_t p = a.sort.sorted[r];
      if (p >= pairs) continue;
      stage1_input(r, p);
      const float *xs = kFp8 ? a.x_scale + r * groups(H) : nullptr;
      T *hr = static_cast<T *>(a.inter_buf) + r * I;
      for (int64_t n = 0; n < I; ++n) {
        float g, u;
        if constexpr (kFp8) {
          g = scaled_dot(row.data(), w.data() + n * H, H, a.group,
                         [&](int64_t k) { return xs[k] * weight_scale(a.w1_scale, e, n, 2 * I, H, k); });
          u = scaled_dot(row.data(), w.data() + (I + n) * H, H, a.group,
                         [&](int64_t k) { return xs[k] * weight_scale(a.w1_scale, e, I + n, 2 * I, H, k); });
        } else {
          g = dot(row.data(), w.data() + n * H, H), u = dot(row.data(), w.data() + (I + n) * H, H);
        }
        hr[n] = from_f32<T>(activate(a.act, g) * u);
      }
    }
  }

  void stage2(int64_t e, int64_t first) {
    const int64_t pairs = a.tokens * a.topk, H = a.hidden, I = a.inter;
    to_float(static_cast<const W *>(a.w2) + e * H * I, H * I, w.data());
    for (int64_t r = first; r < first + a.sort.block; ++r) {
      const int64_t p = a.sort.sorted[r];
      if (p >= pairs) continue;
      to_float(static_cast<const T *>(a.inter_buf) + r * I, I, h.data());
      float *hs = kFp8 ? a.h_scale + r * groups(I) : nullptr;
      if constexpr (kFp8) quantize_groups(h.data(), I, a.group, static_cast<W *>(a.hq) + r * I, hs);
      T *y = static_cast<T *>(a.pair_out) + p * H;
      for (int64_t n = 0; n < H; ++n) {
        float v;
        if constexpr (kFp8)
          v = scaled_dot(h.data(), w.data() + n * I, I, a.group,
                         [&](int64_t k) { return hs[k] * weight_scale(a.w2_scale, e, n, H, I, k); });
        else
          v = dot(h.data(), w.data() + n * I, I);
        y[n] = from_f32<T>(v);
      }
    }
  }

  void run(int64_t b) {
    const int64_t e = a.sort.block_experts[b];
    if (e < 0 || e >= a.local_experts) return;
    stage1(e, b * a.sort.block);
    stage2(e, b * a.sort.block);
  }
};

template <class T>
void combine(const FusedMoeArgs &a) {
  parallel_for(a.tokens, 4, [&](int64_t begin, int64_t end) {
    std::vector<float> acc(size_t(a.hidden));
    for (int64_t t = begin; t < end; ++t) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < a.topk; ++j) {
        const int32_t e = a.sort.ids[t * a.sort.ids_rows.row_stride + j];
        if (!mask_on(a.sort.mask, a.sort.mask_bytes, e)) continue;
        const float w = a.weights_on_input ? 1.0f : a.weights[t * a.weights_stride + j];
        const T *y = static_cast<const T *>(a.pair_out) + (t * a.topk + j) * a.hidden;
        for (int64_t n = 0; n < a.hidden; ++n) acc[size_t(n)] += w * to_f32(y[n]);
      }
      T *o = static_cast<T *>(a.out) + t * a.out_stride;
      for (int64_t n = 0; n < a.hidden; ++n) o[n] = from_f32<T>(acc[size_t(n)]);
    }
  });
}

template <class T, class W>
void fused(const FusedMoeArgs &a) {
  const int64_t valid = a.sort.num_valid[0];
  parallel_for(valid / a.sort.block, 1, [&](int64_t begin, int64_t end) {
    Block<T, W> block(a);
    for (int64_t b = begin; b < end; ++b) block.run(b);
  });
  combine<T>(a);
}

template <class T>
void fused_for_weights(const FusedMoeArgs &a) {
  if (a.wdtype == DType::e4m3fn)
    fused<T, e4m3fn_t>(a);
  else if (a.wdtype == DType::e4m3fnuz)
    fused<T, e4m3fnuz_t>(a);
  else
    fused<T, T>(a);
}

// With a mask, w1/w2 hold exactly the local experts.
aiter_status check_local_count(const FusedMoeArgs &a) {
  if (a.sort.mask == nullptr) return AITER_OK;
  int64_t local = 0;
  for (int32_t e = 0; e < a.sort.experts; ++e) local += mask_on(a.sort.mask, a.sort.mask_bytes, e) ? 1 : 0;
  if (local == a.local_experts) return AITER_OK;
  return fail(AITER_ERR_INVALID_ARGUMENT, "%s: expert_mask: expected as many local experts as w1 holds (%lld), got %lld",
              a.sort.op, (long long)a.local_experts, (long long)local);
}

}  // namespace

aiter_status fused_moe(const FusedMoeArgs &a) {
  aiter_status s = check_local_count(a);
  if (s == AITER_OK) s = moe_sorting(a.sort);  // checks the ids' values
  if (s != AITER_OK) return s;
  if (a.dtype == DType::bf16)
    fused_for_weights<bf16_t>(a);
  else
    fused_for_weights<half_t>(a);
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
