/*
 * Rotary position embedding, applied in place to q and k.
 *
 * q [T, Hq, D] and k [T, Hk, D]: any strides for T and H (q and k are often
 * views into one fused QKV buffer), unit stride along D.  dtypes fp32/fp16/bf16.
 * positions [T]: int32 or int64 (any stride), each in [0, max_position).  On
 * the CPU an out-of-range position is an error and nothing is written.  On the
 * GPU the host cannot read the positions: a token whose position is out of
 * range is skipped (its rows of q and k are left untouched), the others are
 * rotated, and the call returns AITER_OK.
 * cos_sin_cache [max_position, R]: cos in columns [0, R/2), sin in [R/2, R);
 * R is the rotary dimension (even, <= D); elements D >= R pass through.
 * The cache is fp32 or q's dtype.
 * Aliasing: q and k (both written) may be views of one buffer but share no
 * element; positions may overlap neither (the call is refused: its values are
 * read while q and k are written), nor may cos_sin_cache.
 */
#ifndef AITER_ROPE_H
#define AITER_ROPE_H

#include "aiter/aiter.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aiter_rope_style {
  AITER_ROPE_NEOX = 0, /* rotate pairs (i, i + R/2): the two halves */
  AITER_ROPE_GPTJ = 1  /* rotate pairs (2i, 2i + 1): interleaved */
} aiter_rope_style;

/* k may be NULL to rotate q alone. */
AITER_API aiter_status aiter_rope(DLTensor *q, DLTensor *k, const DLTensor *positions,
                                  const DLTensor *cos_sin_cache, aiter_rope_style style,
                                  void *stream);

#ifdef __cplusplus
}
#endif
#endif /* AITER_ROPE_H */
