// CPU fused MoE, the same steps as the GPU kernels over the same workspace:
// sort the pairs by expert (moe_sorting), then per expert: stage 1
// act(x w_gate) * (x w_up) rounded to the dtype, stage 2 that times w2 rounded
// to the dtype, per pair; then each token's k pair rows summed in fp32 in pair
// order.  Each stage is one GEMM over the expert's rows gathered into a block,
// on the CPU GEMM variant the heuristic picks (AVX-512-BF16 vdpbf16ps,
// AVX-512, AVX2 or portable; cpu/gemm.cpp), fp32 sums.  With
// weights_on_input the input row is x[t] times the pair's weight (rounded to
// the dtype for 16-bit weights).  fp8 weights: each stage's input row is
// quantized per row or 128-group (dynamic scale) and the stage is gemm_a8w8 /
// gemm_a8w8_blockscale's product of the codes times the row and weight scales.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "cpu/quantize.hpp"
#include "ops/gemm.hpp"
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

// Rounds each value to T (16-bit weights: the GPU's rounding of a scaled input row).
template <class T>
void round_row(float *row, int64_t n) {
  for (int64_t i = 0; i < n; ++i) row[i] = to_f32(from_f32<T>(row[i]));
}

// Runs `g` on the CPU GEMM variant of `op` the heuristic picks (the first that
// supports it and fits), as aiter_gemm_* does without a tuned table: the
// AVX-512-BF16 / AVX-512 / AVX2 / portable kernels, threaded over the output.
aiter_status cpu_gemm(GemmOp op, const GemmArgs &g) {
  const VariantList<GemmArgs> list = gemm_variants(op);
  for (size_t i = 0; i < list.count; ++i) {
    const Variant<GemmArgs> &v = list.items[i];
    if (v.supports(g, nullptr) && (v.good_fit == nullptr || v.good_fit(g))) return v.run(g, nullptr);
  }
  return fail(AITER_ERR_INTERNAL, "fused_moe: no CPU GEMM variant runs the expert's stage");
}

// Both stages for the valid rows of one expert, each stage one GEMM over the
// expert's rows gathered into a contiguous block.  T: x / out / intermediates;
// W: the weights (T, or an fp8 type with per-channel or 128 x 128 block scales).
// The rounding points are the GPU's: the stage GEMMs sum in fp32, h is
// act(g) * u rounded to T (and for fp8 requantized per row or 128-group),
// each pair's output row rounded to T once after the scales.
template <class T, class W>
struct Expert {
  static constexpr bool kFp8 = sizeof(W) == 1;
  const FusedMoeArgs &a;
  std::vector<int64_t> rows;  // the sorted rows r of this expert's valid pairs
  std::vector<float> row, gate_up;
  std::vector<T> in16, y;
  std::vector<W> codes;
  std::vector<float> scales;

  explicit Expert(const FusedMoeArgs &args) : a(args), row(size_t(std::max(args.hidden, args.inter))) {}

  int64_t groups(int64_t n) const { return a.group > 0 ? n / a.group : 1; }
  int64_t m() const { return int64_t(rows.size()); }
  GemmOp op() const { return !kFp8 ? GemmOp::a16w16 : a.group > 0 ? GemmOp::a8w8_blockscale : GemmOp::a8w8; }

  // The valid rows of blocks [first, last), all of this expert.
  void collect(int64_t first, int64_t last) {
    rows.clear();
    const int64_t pairs = a.tokens * a.topk;
    for (int64_t r = first * a.sort.block; r < last * a.sort.block; ++r)
      if (a.sort.sorted[r] < pairs) rows.push_back(r);
  }

  // Row i of the GEMM's A from the fp32 row: T for 16-bit weights, else fp8
  // codes quantized per row / group into the workspace (xq / hq and their
  // scales, as the GPU leaves them) and copied into the block.
  void put_row(int64_t i, int64_t r, int64_t k, W *ws_codes, float *ws_scales) {
    if constexpr (kFp8) {
      const int64_t ng = groups(k);
      quantize_groups(row.data(), k, a.group, ws_codes + r * k, ws_scales + r * ng);
      std::copy(ws_codes + r * k, ws_codes + (r + 1) * k, codes.data() + i * k);
      std::copy(ws_scales + r * ng, ws_scales + (r + 1) * ng, scales.data() + i * ng);
    } else {
      for (int64_t c = 0; c < k; ++c) in16[size_t(i * k + c)] = from_f32<T>(row[size_t(c)]);
    }
  }

  void size_inputs(int64_t k) {
    if constexpr (kFp8) {
      codes.resize(size_t(m() * k));
      scales.resize(size_t(m() * groups(k)));
    } else {
      in16.resize(size_t(m() * k));
    }
  }

  // out[m, n] = A[m, k] . w[n, k]^T (times the scales for fp8), out of `out_dtype`.
  aiter_status gemm(int64_t n, int64_t k, const W *w, const float *w_scale, void *out, DType out_dtype) {
    GemmArgs g{};
    g.m = m(), g.n = n, g.k = k;
    g.in_dtype = kFp8 ? a.wdtype : a.dtype;
    g.out_dtype = out_dtype;
    g.a = MatrixRef{kFp8 ? static_cast<const void *>(codes.data()) : in16.data(), k};
    g.w = MatrixRef{w, k};
    g.out = out, g.out_row_stride = n;
    g.bias = nullptr, g.bias_dtype = DType::f32;
    if constexpr (kFp8) {
      g.a_scale = scales.data(), g.w_scale = w_scale;
      g.block_scaled = a.group > 0;
      g.a_scale_per_token = g.w_scale_per_channel = a.group == 0;
      g.a_scale_row_stride = groups(k), g.a_scale_group_stride = 1;
    }
    return cpu_gemm(op(), g);
  }

  // The scales of expert e's matrix of n_rows x k_total.
  const float *expert_scales(const float *s, int64_t e, int64_t n_rows, int64_t k_total) const {
    if (!kFp8) return nullptr;
    return s + e * (a.group > 0 ? (n_rows / a.group) * (k_total / a.group) : n_rows);
  }

  aiter_status stage1(int64_t e) {
    const int64_t H = a.hidden, I = a.inter;
    size_inputs(H);
    for (int64_t i = 0; i < m(); ++i) {
      const int64_t r = rows[size_t(i)];
      input_row<T>(a, a.sort.sorted[r], row.data());
      if (!kFp8 && a.weights_on_input) round_row<T>(row.data(), H);
      put_row(i, r, H, static_cast<W *>(a.xq), a.x_scale);
    }
    gate_up.resize(size_t(m() * 2 * I));
    const W *w1 = static_cast<const W *>(a.w1) + e * 2 * I * H;
    aiter_status s = gemm(2 * I, H, w1, expert_scales(a.w1_scale, e, 2 * I, H), gate_up.data(), DType::f32);
    if (s != AITER_OK) return s;
    parallel_for(m(), 4, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const float *gu = gate_up.data() + i * 2 * I;
        T *hr = static_cast<T *>(a.inter_buf) + rows[size_t(i)] * I;
        for (int64_t n = 0; n < I; ++n) hr[n] = from_f32<T>(activate(a.act, gu[n]) * gu[I + n]);
      }
    });
    return AITER_OK;
  }

  aiter_status stage2(int64_t e) {
    const int64_t H = a.hidden, I = a.inter;
    size_inputs(I);
    for (int64_t i = 0; i < m(); ++i) {
      const int64_t r = rows[size_t(i)];
      to_float(static_cast<const T *>(a.inter_buf) + r * I, I, row.data());
      put_row(i, r, I, static_cast<W *>(a.hq), a.h_scale);
    }
    y.resize(size_t(m() * H));
    const W *w2 = static_cast<const W *>(a.w2) + e * H * I;
    aiter_status s = gemm(H, I, w2, expert_scales(a.w2_scale, e, H, I), y.data(), a.dtype);
    if (s != AITER_OK) return s;
    for (int64_t i = 0; i < m(); ++i) {
      T *dst = static_cast<T *>(a.pair_out) + a.sort.sorted[rows[size_t(i)]] * H;
      std::copy(y.data() + i * H, y.data() + (i + 1) * H, dst);
    }
    return AITER_OK;
  }

  // Blocks [first, last) of expert e.
  aiter_status run(int64_t e, int64_t first, int64_t last) {
    collect(first, last);
    if (rows.empty()) return AITER_OK;
    aiter_status s = stage1(e);
    return s == AITER_OK ? stage2(e) : s;
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

// Each run of consecutive blocks of one local expert: its two stage GEMMs
// (threaded inside), then each token's pairs combined.
template <class T, class W>
aiter_status fused(const FusedMoeArgs &a) {
  const int64_t blocks = a.sort.num_valid[0] / a.sort.block;
  Expert<T, W> expert(a);
  for (int64_t b = 0; b < blocks;) {
    const int64_t e = a.sort.block_experts[b];
    int64_t last = b + 1;
    while (last < blocks && a.sort.block_experts[last] == e) ++last;
    if (e >= 0 && e < a.local_experts) {
      const aiter_status s = expert.run(e, b, last);
      if (s != AITER_OK) return s;
    }
    b = last;
  }
  combine<T>(a);
  return AITER_OK;
}

template <class T>
aiter_status fused_for_weights(const FusedMoeArgs &a) {
  if (a.wdtype == DType::e4m3fn) return fused<T, e4m3fn_t>(a);
  if (a.wdtype == DType::e4m3fnuz) return fused<T, e4m3fnuz_t>(a);
  return fused<T, T>(a);
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
  if (a.dtype == DType::bf16) return fused_for_weights<bf16_t>(a);
  return fused_for_weights<half_t>(a);
}

}  // namespace cpu
}  // namespace aiter
