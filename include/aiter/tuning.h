/*
 * Kernel selection.  The GEMM and fused-MoE ops have several kernel variants
 * per backend: tile shapes, split-K, skinny paths for small M, vendor BLAS.  A
 * call picks one from the tuned tables (CSV files: shipped, site, user,
 * AITER_CONFIG_PATH), keyed by op, target, compute-unit count, batch, M padded
 * to its bucket, N, K and dtypes (for fused MoE: batch = experts, M = tokens,
 * N = intermediate, K = hidden, and top-k); shapes with no row use a heuristic.
 * These functions let tuners and tests list the variants, force one, and see
 * which one a call ran.
 *
 * Op names are the public function names without the "aiter_" prefix:
 * "gemm_a16w16", "gemm_a8w8", "gemm_a8w8_blockscale", "batched_gemm_a16w16",
 * "batched_gemm_a8w8", "fused_moe", "fused_moe_fp8", and
 * "fused_moe_fp8_blockscale" (fused_moe_fp8 with block scales).
 */
#ifndef AITER_TUNING_H
#define AITER_TUNING_H

#include "aiter/aiter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The variants of `op` for tensors on `device`'s type (kDLCPU or kDLCUDA), in
 * heuristic order.  Writes up to `capacity` names (static strings) to `names`
 * (may be NULL when capacity is 0) and the total to *count. */
AITER_API aiter_status aiter_kernel_variants(const char *op, DLDevice device, const char **names, int capacity,
                                             int *count);

/* Makes every later call of `op` on this thread run `variant` (NULL or "":
 * back to the tuned selection).  An unknown op or variant is an error; a forced
 * variant that cannot run a call's shape fails that call with
 * AITER_ERR_UNSUPPORTED_SHAPE naming the variant. */
AITER_API aiter_status aiter_force_kernel_variant(const char *op, const char *variant);

/* What the last successful selection on this thread chose: the op, the variant
 * and how (0 heuristic, 1 tuned table row, 2 forced).  Strings are static. */
AITER_API aiter_status aiter_last_kernel_variant(const char **op, const char **variant, int *how);

/* The target ("cpu", "sm_90a", "gfx942", ...) and compute-unit count (CPU
 * threads, GPU multiprocessors) that table rows for `device` are keyed by, as a
 * tuner writes them.  *target is valid until the next call on this thread. */
AITER_API aiter_status aiter_tuned_config_device(DLDevice device, const char **target, int *compute_units);

/* Re-reads the tuned tables (and the AITER_CONFIG_PATH, AITER_LOG_* settings). */
AITER_API aiter_status aiter_reload_tuned_configs(void);

/* One line per table source that was read ("path: N rows") or failed, joined by
 * newlines; "" when none.  Valid until the next call on this thread. */
AITER_API const char *aiter_tuned_config_sources(void);

#ifdef __cplusplus
}
#endif
#endif /* AITER_TUNING_H */
