/*
 * Quantization to 8 bits.  x [..., H] in fp32/fp16/bf16; out has x's shape and
 * is int8, fp8 e4m3fn, fp8 e4m3fnuz or fp8 e5m2.  Scales are fp32, with
 * x ~= out * scale.  x and out may be strided row-wise (see aiter.h); scales
 * are compact.
 *
 * Dynamic scales are amax / qmax, where qmax is 127 (int8), 448 (e4m3fn),
 * 240 (e4m3fnuz) or 57344 (e5m2); where amax is 0 the scale is 1, and a scale
 * is never below FLT_MIN, so that 1/scale stays finite.  Values are rounded to
 * nearest (ties to even) after multiplying by 1/scale, and saturate at +-qmax;
 * int8 uses [-127, 127].  NaN in x is skipped by amax and gives NaN (fp8) or 0
 * (int8); an infinite x gives an infinite dynamic scale.
 *
 * GPU tensors (kDLCUDA) are quantized on the device with the same rules and the
 * same bits as on the CPU, asynchronously on `stream`, with no allocation and no
 * host synchronization (so the calls can be captured into CUDA graphs).  Data must
 * be aligned to its element size there.
 *
 * Aliasing: out and scale overlap neither x, a static scale, nor each other (aiter.h).
 */
#ifndef AITER_QUANT_H
#define AITER_QUANT_H

#include "aiter/aiter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One scale for the whole tensor; scale is [1] (or [1, 1]) fp32, written.  On the
 * GPU the scale tensor holds amax while the op runs (other readers of it on other
 * streams must wait for the op, as for any output). */
AITER_API aiter_status aiter_quant_per_tensor_dynamic(DLTensor *out, DLTensor *scale,
                                                      const DLTensor *x, void *stream);

/* One scale per row of x; scale is [..., 1] (x's shape with the last dim 1), written.
 * Rows of any length (on the GPU, aligned rows of up to 32768 elements, a multiple
 * of 8, are read once from memory; others twice, the second time mostly from L2). */
AITER_API aiter_status aiter_quant_per_token_dynamic(DLTensor *out, DLTensor *scale,
                                                     const DLTensor *x, void *stream);

/* A given scale, [1] (or [1, 1]) fp32, read: a finite value >= FLT_MIN.  On the
 * CPU a scale outside that range is AITER_ERR_INVALID_ARGUMENT.  On the GPU the
 * value lives in device memory and is not checked: the output is then whatever
 * x * (1.0f / scale) quantizes to (a scale of 0 gives +-qmax for nonzero x and NaN
 * (fp8) / 0 (int8) for zeros; an infinite scale gives zeros; a negative one flips
 * signs; NaN gives NaN (fp8) / 0 (int8) everywhere). */
AITER_API aiter_status aiter_quant_per_tensor_static(DLTensor *out, const DLTensor *x,
                                                     const DLTensor *scale, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* AITER_QUANT_H */
