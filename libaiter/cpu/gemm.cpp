// The CPU GEMM variants of every GEMM op, in heuristic order (the first whose
// good_fit holds runs, see tuning/select.hpp).  Each variant runs every op:
// batched ones over all matrices at once, blockscale with its group scales.
//   cpu.avx512  packed panels of 32-bit slots on AVX-512: vdpbf16ps for bf16
//               and fp8, vpdpwssd for int8 (cpu/gemm_avx512.cpp); only where
//               the CPU has AVX-512 (and AITER_CPU_ISA does not cap it)
//   cpu.openblas  OpenBLAS's cblas_sgemm, dlopen-ed when present
//               (cpu/gemm_openblas.cpp); gemm_a16w16 and batched_gemm_a16w16
//               only, for tuned tables: the heuristic never picks it
//   cpu.onednn  oneDNN 2.x's matmul, dlopen-ed when present
//               (cpu/gemm_onednn.cpp); the same ops, the same role
//   cpu.skinny  few rows of A: parallel over N only, A converted once
//               (cpu/gemm_skinny.cpp)
//   cpu.packed  packed panels and an outer-product kernel (cpu/gemm_packed.cpp)
//   cpu.tiled   96 x 128 tiles, dot-product kernel on unpacked rows
//               (cpu/gemm_tiled.cpp)
// The shared pieces: cpu/gemm_plan.hpp (operands, store, batch walk) and
// cpu/gemm_kernels.hpp (the register kernels).
#include <iterator>

#include "cpu/gemm_plan.hpp"
#include "cpu/isa.hpp"

namespace aiter {
namespace cpu {
namespace {

bool any_call(const GemmArgs &, const GpuCall *) { return true; }
bool avx512_call(const GemmArgs &g, const GpuCall *) { return gemm_avx512_supports(g); }
bool openblas_call(const GemmArgs &g, const GpuCall *) { return gemm_openblas_supports(g); }
bool onednn_call(const GemmArgs &g, const GpuCall *) { return gemm_onednn_supports(g); }
bool never_fit(const GemmArgs &) { return false; }

// The heuristic, from timings on a 2-core AVX2 machine (Zen 1, bf16, 2
// threads): skinny for decode-sized M (M = 1, N = K = 4096: 2.2 ms against
// tiled's 3.3) and below prefill-sized M wherever all of A as fp32 fits in L2
// (it is re-read for every strip of W); packed for prefill-sized M (1024 x
// 1024 x 2048: 64 ms, tiled 72, skinny 86), most of all with short K, where the
// dot-product kernels spend their time adding up lanes (K = 64: 0.32 ms against
// 0.46); tiled for the rest: medium M with long K, and prefill-sized
// blockscale, whose packed kernel stops at every K group.
constexpr int64_t kDecodeRows = 16;
constexpr int64_t kPrefillRows = 64;
constexpr int64_t kL2Floats = 64 * 1024;  // 256 KB
constexpr int64_t kAvx512SkinnyRows = 2;

bool skinny_fit(const GemmArgs &g) { return g.m <= kDecodeRows || (g.m < kPrefillRows && g.m * g.k <= kL2Floats); }
// cpu.avx512 from 3 rows of A on (2 ms against skinny's 6.3 for bf16 at M = 4,
// N = K = 4096), and at every M for bf16 where vdpbf16ps reads it straight from
// memory (M = 1: 1.0 ms against 1.5), for fp8 there (decoded to bf16 in
// registers), and for int8 (its dot-product form widens W in registers: M = 1:
// 1.26 ms against 3.26); fp32 at M = 1 stays with skinny (2.3 ms against 4.1:
// the packed panels cost more than one row of A saves), and so does
// blockscale, which cpu.avx512 runs in fp32.
bool avx512_fit(const GemmArgs &g) {
  const bool bf16_operands = g.in_dtype == DType::bf16 || (is_fp8(g.in_dtype) && !g.block_scaled);
  const bool bf16_dot = bf16_operands && isa_at_least(Isa::avx512_bf16);
  return g.m > kAvx512SkinnyRows || bf16_dot || g.in_dtype == DType::i8;
}
bool packed_fit(const GemmArgs &g) { return g.m >= kPrefillRows && !g.block_scaled; }

const Variant<GemmArgs> kVariants[] = {
    {"cpu.avx512", avx512_call, avx512_fit, gemm_avx512},
    {"cpu.skinny", any_call, skinny_fit, gemm_skinny},
    {"cpu.packed", any_call, packed_fit, gemm_packed},
    {"cpu.tiled", any_call, nullptr, gemm_tiled},
    // The float ops' list only, from here on.
    {"cpu.openblas", openblas_call, never_fit, gemm_openblas},
    {"cpu.onednn", onednn_call, never_fit, gemm_onednn},
};
constexpr size_t kEveryOpVariants = std::size(kVariants) - 2;

}  // namespace

VariantList<GemmArgs> gemm_variants(GemmOp op) {
  const bool float_op = op == GemmOp::a16w16 || op == GemmOp::batched_a16w16;
  return {kVariants, float_op ? std::size(kVariants) : kEveryOpVariants};
}

}  // namespace cpu
}  // namespace aiter
