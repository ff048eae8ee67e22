// CPU top-k softmax routing: one token (gating row) at a time, tokens spread
// over the worker threads; softmax in fp32 over contiguous scratch.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/parallel.hpp"
#include "ops/moe.hpp"

namespace aiter {
namespace cpu {
namespace {

// prob[i] = softmax(logits)[i], with the maximum subtracted so exp cannot overflow.
void softmax(float *prob, int64_t n) {
  float max = prob[0];
  for (int64_t i = 1; i < n; ++i) max = std::max(max, prob[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    prob[i] = std::exp(prob[i] - max);
    sum += prob[i];
  }
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) prob[i] *= inv;
}

// Moves the ids of the k largest probabilities, largest first, to the front of
// `ids`; equal probabilities keep expert order.  NaN ranks below everything, so
// the order stays a strict weak ordering whatever the input holds.
void select_topk(const float *prob, int64_t k, std::vector<int32_t> &ids) {
  std::iota(ids.begin(), ids.end(), 0);
  const auto key = [prob](int32_t e) { return std::isnan(prob[e]) ? -1.0f : prob[e]; };
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    const float ka = key(a), kb = key(b);
    return ka > kb || (ka == kb && a < b);
  });
}

template <class T>
void topk_softmax_rows(const TopkSoftmaxArgs &a) {
  const int64_t experts = a.gating_rows.cols, k = a.weights_rows.cols;
  const int64_t grain = std::max<int64_t>(1, 8192 / experts);
  parallel_for(a.gating_rows.rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> prob(static_cast<size_t>(experts));
    std::vector<int32_t> order(static_cast<size_t>(experts));
    for (int64_t r = begin; r < end; ++r) {
      const T *logits = static_cast<const T *>(a.gating) + r * a.gating_rows.row_stride;
      for (int64_t i = 0; i < experts; ++i) prob[size_t(i)] = to_f32(logits[i]);
      softmax(prob.data(), experts);
      select_topk(prob.data(), k, order);
      float total = 0.0f;
      for (int64_t j = 0; j < k; ++j) total += prob[size_t(order[size_t(j)])];
      const float scale = a.renormalize ? 1.0f / total : 1.0f;
      float *weights = a.weights + r * a.weights_rows.row_stride;
      int32_t *ids = a.ids + r * a.ids_rows.row_stride;
      for (int64_t j = 0; j < k; ++j) {
        ids[j] = order[size_t(j)];
        weights[j] = prob[size_t(order[size_t(j)])] * scale;
      }
    }
  });
}

}  // namespace

aiter_status topk_softmax(const TopkSoftmaxArgs &a) {
  if (a.gating_rows.rows == 0) return AITER_OK;
  visit_float(a.dtype, [&](auto tag) { topk_softmax_rows<decltype(tag)>(a); });
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
