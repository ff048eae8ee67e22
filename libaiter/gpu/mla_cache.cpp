// GPU launcher of concat_and_cache_mla (kernels/mla/mla.cu): a block per token,
// writing its 576-wide latent row.
#include <climits>
#include <string>

#include "gpu/launch.hpp"
#include "kernels/common/quant_kind.h"
#include "kernels/mla/mla_params.h"
#include "ops/mla.hpp"

namespace aiter {
namespace gpu {

aiter_status concat_and_cache_mla(const MlaCacheWriteArgs &a, const GpuCall &call) {
  if (a.tokens == 0) return AITER_OK;
  if (a.tokens > INT_MAX)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "aiter_concat_and_cache_mla: %lld tokens are more than one launch holds",
                (long long)a.tokens);
  MlaCacheParams p{};
  p.kv_c = a.kv_c, p.k_pe = a.k_pe;
  p.kv_cache = a.kv_cache;
  p.slot_mapping = a.slot_mapping;
  p.kv_c_stride = a.kv_c_stride, p.k_pe_stride = a.k_pe_stride;
  p.num_slots = a.num_slots;
  p.scale = a.scale;
  p.slots_int64 = a.slots_are_int64;
  p.quant = a.cache_dtype == DType::e4m3fnuz ? kQuantE4m3fnuz : a.cache_dtype == DType::e4m3fn ? kQuantE4m3fn
                                                                                              : kQuantNone;
  const std::string variant = std::string(dtype_tag(a.dtype)) + (is_fp8(a.cache_dtype) ? ".fp8" : ".same");
  return launch(call, "concat_and_cache_mla", variant, Dim3{unsigned(a.tokens), 1, 1}, 128, p);
}

}  // namespace gpu
}  // namespace aiter
