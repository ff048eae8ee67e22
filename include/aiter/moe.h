/*
 * Mixture-of-experts routing.
 * Aliasing: topk_weights and topk_ids overlap neither gating nor each other (aiter.h).
 */
#ifndef AITER_MOE_H
#define AITER_MOE_H

#include "aiter/aiter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gating [T, E] fp32/fp16/bf16 -> softmax over E, then the k largest
 * probabilities (k = topk_weights.shape[1], 1 <= k <= E) in descending order,
 * ties going to the lower expert id.  topk_weights [T, k] fp32, topk_ids [T, k]
 * int32.  With renormalize != 0 the k weights of a token are divided by their sum. */
AITER_API aiter_status aiter_topk_softmax(DLTensor *topk_weights, DLTensor *topk_ids,
                                          const DLTensor *gating, int32_t renormalize,
                                          void *stream);

#ifdef __cplusplus
}
#endif
#endif /* AITER_MOE_H */
