// Kernel selection of the fused MoE through the tuned tables (tuning/select.hpp).
// Table key: batch = experts (the global count), m = tokens (bucketed), n =
// inter, k = hidden, topk, a_dtype = the weights' dtype, out_dtype = x's.
// Three table ops, as the weights differ: "fused_moe" (16-bit), "fused_moe_fp8"
// (per-channel scales), "fused_moe_fp8_blockscale" (128 x 128 blocks).
#include "ops/moe.hpp"

namespace aiter {
namespace {

bool any_cpu_call(const FusedMoeArgs &, const GpuCall *call) { return call == nullptr; }
aiter_status run_cpu(const FusedMoeArgs &a, const GpuCall *) { return cpu::fused_moe(a); }

// The CPU has one kernel: expert blocks in parallel, both stages a block.
const Variant<FusedMoeArgs> kCpuVariants[] = {{"blocks", any_cpu_call, nullptr, run_cpu}};

bool mma_fits(const FusedMoeArgs &a, const GpuCall *call) {
  return call != nullptr && gpu::fused_moe_mma_fits(a, *call);
}
bool triton_fits(const FusedMoeArgs &a, const GpuCall *call) {
  return call != nullptr && gpu::fused_moe_triton_fits(a, *call);
}
bool decode_fits(const FusedMoeArgs &a, const GpuCall *call) {
  return call != nullptr && gpu::fused_moe_decode_fits(a, *call);
}
bool any_gpu_call(const FusedMoeArgs &, const GpuCall *call) { return call != nullptr; }
bool never_first(const FusedMoeArgs &) { return false; }  // fixed tile widths: tuned or forced only

template <int32_t Code>
aiter_status run_gpu(const FusedMoeArgs &a, const GpuCall *call) {
  FusedMoeArgs b = a;
  b.variant = Code;
  return gpu::fused_moe(b, *call);
}

// Heuristic order: "mma" (tensor cores where the shapes allow, the tile width
// by the SMs the tiles would fill; fp8 without fp8 products falls back to the
// portable stages; from 64 rows an expert the Triton stages where built), else
// "portable".  "triton" forces the Triton stages at any row count,
// "triton_wide" / "triton_narrow" with their tiles fixed; "decode" the
// one-kernel layer for few pairs (which "mma" takes by default where it fits).
const Variant<FusedMoeArgs> kGpuVariants[] = {
    {"mma", mma_fits, nullptr, run_gpu<kMoeAuto>},
    {"mma_n128", mma_fits, never_first, run_gpu<kMoeMmaWide>},
    {"mma_n64", mma_fits, never_first, run_gpu<kMoeMmaNarrow>},
    {"triton", triton_fits, never_first, run_gpu<kMoeTriton>},
    {"triton_wide", triton_fits, never_first, run_gpu<kMoeTritonWide>},
    {"triton_narrow", triton_fits, never_first, run_gpu<kMoeTritonNarrow>},
    {"decode", decode_fits, never_first, run_gpu<kMoeDecode>},
    {"portable", any_gpu_call, nullptr, run_gpu<kMoePortable>},
};

void moe_key(const FusedMoeArgs &a, TuneKey *key) {
  key->batch = a.sort.experts;
  key->m = a.tokens;
  key->n = a.inter;
  key->k = a.hidden;
  key->topk = a.topk;
  key->a_dtype = a.wdtype;
  key->out_dtype = a.dtype;
}

constexpr VariantList<FusedMoeArgs> kCpu{kCpuVariants, sizeof(kCpuVariants) / sizeof(kCpuVariants[0])};
constexpr VariantList<FusedMoeArgs> kGpu{kGpuVariants, sizeof(kGpuVariants) / sizeof(kGpuVariants[0])};

const TunedOp<FusedMoeArgs> kOps[] = {
    {"aiter_fused_moe", "fused_moe", kCpu, kGpu, moe_key},
    {"aiter_fused_moe_fp8", "fused_moe_fp8", kCpu, kGpu, moe_key},
    {"aiter_fused_moe_fp8", "fused_moe_fp8_blockscale", kCpu, kGpu, moe_key},
};

template <int Index>
std::vector<const char *> names_of(DLDeviceType backend) {
  return variant_names(kOps[Index], backend);
}

}  // namespace

aiter_status run_fused_moe_tuned(const FusedMoeArgs &a, const DLTensor *where, void *stream) {
  const bool fp8 = a.wdtype == DType::e4m3fn || a.wdtype == DType::e4m3fnuz;
  return run_tuned(kOps[fp8 ? (a.group > 0 ? 2 : 1) : 0], where, a, stream);
}

std::vector<TunedOpNames> moe_tuned_op_names() {
  return {{"fused_moe", names_of<0>}, {"fused_moe_fp8", names_of<1>}, {"fused_moe_fp8_blockscale", names_of<2>}};
}

}  // namespace aiter
