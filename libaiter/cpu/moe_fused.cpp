// CPU fused MoE, the same steps as the GPU kernels over the same workspace:
// sort the pairs by expert (moe_sorting), [scale the input rows by their
// routing weight], stage 1 per row: act(x w_gate) * (x w_up) rounded to the
// dtype; stage 2: that times w2 rounded to the dtype, per pair; then each
// token's k pair rows summed in fp32 in pair order.  Dot products in fp32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
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

// The input row of sorted row r (pair p): x[t] or its scaled copy.
template <class T>
const T *input_row(const FusedMoeArgs &a, int64_t r, int64_t p) {
  if (a.weights_on_input) return static_cast<const T *>(a.x_sorted) + r * a.hidden;
  return static_cast<const T *>(a.x) + (p / a.topk) * a.x_stride;
}

template <class T>
void scale_inputs(const FusedMoeArgs &a, int64_t valid) {
  const int64_t pairs = a.tokens * a.topk;
  parallel_for(valid, 16, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t p = a.sort.sorted[r];
      if (p >= pairs) continue;
      const int64_t t = p / a.topk;
      const float w = a.weights[t * a.weights_stride + p % a.topk];
      const T *x = static_cast<const T *>(a.x) + t * a.x_stride;
      T *dst = static_cast<T *>(a.x_sorted) + r * a.hidden;
      for (int64_t i = 0; i < a.hidden; ++i) dst[i] = from_f32<T>(to_f32(x[i]) * w);
    }
  });
}

// Both stages for the rows of one expert block: the block's weights are
// converted to fp32 once.
template <class T>
void run_block(const FusedMoeArgs &a, int64_t b, std::vector<float> &w, std::vector<float> &row,
               std::vector<float> &h) {
  const int64_t e = a.sort.block_experts[b], pairs = a.tokens * a.topk, H = a.hidden, I = a.inter;
  if (e < 0 || e >= a.local_experts) return;
  const int64_t first = b * a.sort.block;
  w.resize(size_t(std::max(2 * I * H, H * I)));
  to_float(static_cast<const T *>(a.w1) + e * 2 * I * H, 2 * I * H, w.data());
  for (int64_t r = first; r < first + a.sort.block; ++r) {
    const int64_t p = a.sort.sorted[r];
    if (p >= pairs) continue;
    to_float(input_row<T>(a, r, p), H, row.data());
    T *hr = static_cast<T *>(a.inter_buf) + r * I;
    for (int64_t n = 0; n < I; ++n) {
      const float g = dot(row.data(), w.data() + n * H, H), u = dot(row.data(), w.data() + (I + n) * H, H);
      hr[n] = from_f32<T>(activate(a.act, g) * u);
    }
  }
  to_float(static_cast<const T *>(a.w2) + e * H * I, H * I, w.data());
  for (int64_t r = first; r < first + a.sort.block; ++r) {
    const int64_t p = a.sort.sorted[r];
    if (p >= pairs) continue;
    to_float(static_cast<const T *>(a.inter_buf) + r * I, I, h.data());
    T *y = static_cast<T *>(a.pair_out) + p * H;
    for (int64_t n = 0; n < H; ++n) y[n] = from_f32<T>(dot(h.data(), w.data() + n * I, I));
  }
}

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

template <class T>
void fused(const FusedMoeArgs &a) {
  const int64_t valid = a.sort.num_valid[0];
  if (a.weights_on_input) scale_inputs<T>(a, valid);
  parallel_for(valid / a.sort.block, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> w, row(size_t(a.hidden)), h(size_t(a.inter));
    for (int64_t b = begin; b < end; ++b) run_block<T>(a, b, w, row, h);
  });
  combine<T>(a);
}

// With a mask, w1/w2 hold exactly the local experts.
aiter_status check_local_count(const FusedMoeArgs &a) {
  if (a.sort.mask == nullptr) return AITER_OK;
  int64_t local = 0;
  for (int32_t e = 0; e < a.sort.experts; ++e) local += mask_on(a.sort.mask, a.sort.mask_bytes, e) ? 1 : 0;
  if (local == a.local_experts) return AITER_OK;
  return fail(AITER_ERR_INVALID_ARGUMENT,
              "aiter_fused_moe: expert_mask: expected as many local experts as w1 holds (%lld), got %lld",
              (long long)a.local_experts, (long long)local);
}

}  // namespace

aiter_status fused_moe(const FusedMoeArgs &a) {
  aiter_status s = check_local_count(a);
  if (s == AITER_OK) s = moe_sorting(a.sort);  // checks the ids' values
  if (s != AITER_OK) return s;
  if (a.dtype == DType::bf16)
    fused<bf16_t>(a);
  else
    fused<half_t>(a);
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
