// The fused MoE for few pairs as one cooperative kernel (kernels/moe/moe_decode.cu):
// chosen by gpu/moe_fused.cpp for decode, where the six-kernel chain's fixed
// cost is most of the layer's time.
#pragma once

#include "ops/moe.hpp"

namespace aiter {
namespace gpu {

// Whether it can run this call: an NVIDIA device, 16-bit weights or e4m3fn
// weights with per-channel scales, no weights_on_input, at most
// kMoeDecodeMaxPairs pairs and kMoeMaxExperts experts (global and local), hidden and inter
// multiples of 64, x's rows and the weights 16-byte aligned.  (Whether its code
// object is built for the device shows at launch: AITER_ERR_NO_KERNEL.)
bool decode_moe_fits(const FusedMoeArgs &a, const GpuCall &call);

// The whole layer (its table of experts, [quantization of x], stage 1,
// [quantization of the stage-1 rows], stage 2, the combine) in one launch.
aiter_status decode_moe(const FusedMoeArgs &a, const GpuCall &call);

}  // namespace gpu
}  // namespace aiter
