// Tuned tables: CSV rows mapping a problem (op, target, compute units, batch,
// M bucket, N, K, dtypes) to the kernel variant that measured fastest.  Sources
// merge row by row, later ones winning: the shipped tables, the site folder,
// the user's folder, then AITER_CONFIG_PATH.
#pragma once

#include <cstdint>
#include <string>

#include "aiter/aiter.h"
#include "core/dtype.hpp"

namespace aiter {

// One problem as the tables key it.
struct TuneKey {
  const char *op = "";       // "gemm_a16w16", ...
  std::string target;        // "sm_90a", "gfx942", or "cpu"
  int compute_units = 0;     // multiprocessors / compute units, or CPU threads
  int64_t batch = 1, m = 0, n = 0, k = 0;
  DType a_dtype = DType::unknown, out_dtype = DType::unknown;
  int64_t topk = 0;  // fused MoE: experts a token (batch: experts, m: tokens, n: inter, k: hidden); GEMMs 0
};

// M rounded up to the table's bucket (1, 2, 4, ..., 8192, then multiples of 8192).
int64_t m_bucket(int64_t m);

// The variant a table row names for `key` (M bucketed here), or "" if no row
// matches.  Reads the tables at the first lookup and parses those that can hold
// rows for key.target at that target's first lookup (config.cpp says why); a
// malformed table is reported once through the log and in
// aiter_tuned_config_sources(), and its rows are not used.
std::string tuned_variant(const TuneKey &key);

// With AITER_LOG_UNTUNED=1: appends `key` to the untuned CSV, once per key and
// process.  With AITER_LOG_TUNED_CONFIG=1 each lookup is logged.
void note_untuned(const TuneKey &key);
void log_lookup(const TuneKey &key, const char *variant, const char *how);

// Whether the vendor BLAS variants (cuBLASLt, hipBLASLt) may run: off with
// AITER_VENDOR_BLAS=0 (then they are never chosen and a forced one cannot run).
bool vendor_blas_enabled();

// Forgets the loaded tables and settings; the next lookup reads them again.
aiter_status reload_tuned_configs();
std::string tuned_config_sources();

}  // namespace aiter
