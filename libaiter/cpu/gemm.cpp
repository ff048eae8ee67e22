// The CPU GEMM variants of every GEMM op, in heuristic order (the first whose
// good_fit holds runs, see tuning/select.hpp).  Each variant runs every op:
// batched ones over all matrices at once, blockscale with its group scales.
//   cpu.skinny  few rows of A: parallel over N only, A converted once
//               (cpu/gemm_skinny.cpp)
//   cpu.packed  packed panels and an outer-product kernel (cpu/gemm_packed.cpp)
//   cpu.tiled   96 x 128 tiles, dot-product kernel on unpacked rows
//               (cpu/gemm_tiled.cpp)
// The shared pieces: cpu/gemm_plan.hpp (operands, store, batch walk) and
// cpu/gemm_kernels.hpp (the register kernels).
#include <iterator>

#include "cpu/gemm_plan.hpp"

namespace aiter {
namespace cpu {
namespace {

bool any_call(const GemmArgs &, const GpuCall *) { return true; }

// Decode-sized M: the product streams W and 96-row tiles would be mostly empty.
bool few_rows(const GemmArgs &g) { return g.m <= 16; }

const Variant<GemmArgs> kVariants[] = {
    {"cpu.skinny", any_call, few_rows, gemm_skinny},
    {"cpu.packed", any_call, nullptr, gemm_packed},
    {"cpu.tiled", any_call, nullptr, gemm_tiled},
};

}  // namespace

VariantList<GemmArgs> gemm_variants(GemmOp) { return {kVariants, std::size(kVariants)}; }

}  // namespace cpu
}  // namespace aiter
