// CPU routing (topk_softmax, topk_sigmoid, grouped_topk): one token (gating
// row) at a time, tokens spread over the worker threads.  Experts are chosen
// by their selection value (the logit, or float(sigmoid) + bias), larger first,
// ties to the lower id, NaN last: the rule the GPU kernel follows bit for bit.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/parallel.hpp"
#include "ops/moe.hpp"

namespace aiter {
namespace cpu {
namespace {

// NaN ranks below every number, so comparisons stay a strict weak ordering.
float rank_key(float v) { return std::isnan(v) ? -INFINITY : v; }

// a before b: larger key first, then lower index.  -inf ties with NaN: both
// rank last, in index order (as on the GPU).
bool before(float ka, int32_t a, float kb, int32_t b) { return ka > kb || (ka == kb && a < b); }

float bias_at(const RoutingArgs &a, int64_t i) {
  switch (a.bias_dtype) {
    case DType::f16: return to_f32(static_cast<const half_t *>(a.bias)[i]);
    case DType::bf16: return to_f32(static_cast<const bf16_t *>(a.bias)[i]);
    default: return static_cast<const float *>(a.bias)[i];
  }
}

float sigmoid_f32(float x) { return float(1.0 / (1.0 + std::exp(-double(x)))); }

// scores (the weights' source) from the logits: softmax in fp32 with the
// maximum subtracted, or the sigmoid.
void scores_of(const std::vector<float> &logit, bool sigmoid, std::vector<float> &score) {
  const size_t n = logit.size();
  if (sigmoid) {
    for (size_t i = 0; i < n; ++i) score[i] = sigmoid_f32(logit[i]);
    return;
  }
  float max = logit[0];
  for (size_t i = 1; i < n; ++i) max = std::max(max, logit[i]);
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) sum += score[i] = std::exp(logit[i] - max);
  const float inv = 1.0f / sum;
  for (size_t i = 0; i < n; ++i) score[i] *= inv;
}

// Group g's rank value: its largest key without a bias, else the sum of its two
// largest keys (the larger first, as the GPU adds them).
float group_value(const std::vector<float> &key, int64_t first, int64_t size, bool biased) {
  float best = -INFINITY, second = -INFINITY;
  for (int64_t e = first; e < first + size; ++e) {
    const float v = key[size_t(e)];
    if (v > best) second = best, best = v;
    else if (v > second) second = v;
  }
  return biased && size > 1 ? best + second : best;
}

// The experts allowed after group selection (all of them with one group kept).
void allowed_experts(const RoutingArgs &a, const std::vector<float> &key, std::vector<char> &allowed) {
  const int64_t experts = int64_t(key.size()), size = experts / a.groups;
  std::fill(allowed.begin(), allowed.end(), char(a.topk_group == a.groups));
  if (a.topk_group == a.groups) return;
  std::vector<float> gv(static_cast<size_t>(a.groups));
  std::vector<int32_t> order(static_cast<size_t>(a.groups));
  for (int32_t g = 0; g < a.groups; ++g) gv[size_t(g)] = rank_key(group_value(key, g * size, size, a.bias != nullptr));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + a.topk_group, order.end(),
                    [&](int32_t x, int32_t y) { return before(gv[size_t(x)], x, gv[size_t(y)], y); });
  for (int32_t i = 0; i < a.topk_group; ++i)
    std::fill_n(allowed.begin() + order[size_t(i)] * size, size, char(1));
}

template <class T>
void route_rows(const RoutingArgs &a) {
  const int64_t experts = a.gating_rows.cols, k = a.weights_rows.cols;
  const int64_t grain = std::max<int64_t>(1, 8192 / experts);
  parallel_for(a.gating_rows.rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> logit(static_cast<size_t>(experts)), score(logit), key(logit);
    std::vector<char> allowed(static_cast<size_t>(experts));
    std::vector<int32_t> order(static_cast<size_t>(experts));
    for (int64_t r = begin; r < end; ++r) {
      const T *row = static_cast<const T *>(a.gating) + r * a.gating_rows.row_stride;
      for (int64_t i = 0; i < experts; ++i) logit[size_t(i)] = to_f32(row[i]);
      scores_of(logit, a.sigmoid, score);
      for (int64_t i = 0; i < experts; ++i)
        key[size_t(i)] = rank_key(a.bias ? score[size_t(i)] + bias_at(a, i) : logit[size_t(i)]);
      allowed_experts(a, key, allowed);
      std::iota(order.begin(), order.end(), 0);
      // Experts outside the kept groups sort after every allowed one.
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t x, int32_t y) {
        if (allowed[size_t(x)] != allowed[size_t(y)]) return allowed[size_t(x)] > allowed[size_t(y)];
        return before(key[size_t(x)], x, key[size_t(y)], y);
      });
      float total = 0.0f;
      for (int64_t j = 0; j < k; ++j) total += score[size_t(order[size_t(j)])];
      const float norm = a.renormalize ? a.scale / total : a.scale;
      float *weights = a.weights + r * a.weights_rows.row_stride;
      int32_t *ids = a.ids + r * a.ids_rows.row_stride;
      for (int64_t j = 0; j < k; ++j) {
        ids[j] = order[size_t(j)];
        weights[j] = a.renormalize ? score[size_t(order[size_t(j)])] / total * a.scale
                                   : score[size_t(order[size_t(j)])] * norm;
      }
    }
  });
}

}  // namespace

aiter_status route(const RoutingArgs &a) {
  if (a.gating_rows.rows == 0) return AITER_OK;
  visit_float(a.dtype, [&](auto tag) { route_rows<decltype(tag)>(a); });
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
