// Launching the Triton GEMM kernels: one code object per input dtype and tile
// (kernels/triton/build.py), whose run-time arguments are GemmArgs' fields by
// name, packed in the kernel's own order from the manifest (triton_args.hpp).
#include "gpu/triton_gemm.hpp"

#include <atomic>
#include <climits>
#include <string>
#include <utility>

#include "gpu/triton_launch.hpp"
#include "kernels/gemm/gemm_params.h"

namespace aiter {
namespace gpu {
namespace {

struct TritonShape {
  DType dtype;
  int bm, bn, bk;
  bool block_scaled;
};

// build.py's kernels_for(): every target builds a subset (fp8 only where its
// matrix cores have the format; block-scaled 128 x 128 only with 64-wide
// waves; BK 32 for 16 bits on gfx1100).  Large tiles first: the heuristic takes the first good fit.
constexpr TritonShape kShapes[] = {
    {DType::bf16, 128, 128, 64, false},      {DType::bf16, 128, 128, 32, false},
    {DType::bf16, 64, 64, 64, false},        {DType::f16, 128, 128, 64, false},
    {DType::f16, 128, 128, 32, false},       {DType::f16, 64, 64, 64, false},
    {DType::i8, 128, 128, 64, false},        {DType::i8, 64, 64, 128, false},
    {DType::e4m3fn, 128, 128, 64, false},    {DType::e4m3fn, 64, 64, 128, false},
    {DType::e4m3fnuz, 128, 128, 64, false},  {DType::e4m3fnuz, 64, 64, 128, false},
    {DType::e4m3fn, 128, 128, 128, true},    {DType::e4m3fn, 64, 128, 128, true},
    {DType::e4m3fn, 64, 64, 128, true},      {DType::e4m3fnuz, 128, 128, 128, true},
    {DType::e4m3fnuz, 64, 128, 128, true},
};
constexpr size_t kCount = sizeof(kShapes) / sizeof(kShapes[0]);

std::string name_of(const TritonShape &s) {
  return std::string("triton_") + dtype_tag(s.dtype) + "." + std::to_string(s.bm) + "x" + std::to_string(s.bn) + "x" +
         std::to_string(s.bk) + (s.block_scaled ? ".bs" : "");
}

const std::string &name_at(size_t i) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const TritonShape &s : kShapes) v.push_back(name_of(s));
    return v;
  }();
  return names[i];
}

// Whether the device's target has kernel I, asked of the manifest once per device.
template <size_t I>
bool built_for(const GpuCall &call) {
  static std::atomic<signed char> known[kDeviceSlots] = {};  // 0 unknown, 1 yes, -1 no
  const int slot = device_slot(call.device);
  if (slot >= 0 && known[slot].load(std::memory_order_relaxed) != 0) return known[slot] > 0;
  const bool yes = triton_kernel_built(call, "gemm", name_at(I));
  if (slot >= 0) known[slot].store(yes ? 1 : -1, std::memory_order_relaxed);
  return yes;
}

bool multiple_of_16(int64_t v) { return v % 16 == 0; }

int64_t tiles(const GemmArgs &g, const TritonShape &s) { return ((g.m + s.bm - 1) / s.bm) * ((g.n + s.bn - 1) / s.bn); }

// What the kernels were compiled to assume (build.py's ALIGNED): 16-byte
// aligned A and W, K, row and batch strides multiples of 16 elements; and what
// their 32-bit sizes and the grid hold.
bool fits(const GemmArgs &g, const TritonShape &s) {
  if (g.in_dtype != s.dtype || g.block_scaled != s.block_scaled) return false;
  if (g.a_scale_column_major()) return false;  // the kernels index a_scale row-major
  if (reinterpret_cast<uintptr_t>(g.a.data) % 16 != 0 || reinterpret_cast<uintptr_t>(g.w.data) % 16 != 0) return false;
  if (!multiple_of_16(g.k) || !multiple_of_16(g.a.row_stride) || !multiple_of_16(g.w.row_stride) ||
      !multiple_of_16(g.a_batch_stride) || !multiple_of_16(g.w_batch_stride))
    return false;
  if (g.m > INT_MAX || g.n > INT_MAX || g.k > INT_MAX || g.batch > 65535 || tiles(g, s) > INT_MAX) return false;
  return s.dtype != DType::i8 || g.k <= 131072;  // int8 sums exact in int32 (127 * 127 * K < 2^31)
}

template <size_t I>
bool supports(const GemmArgs &g, const GpuCall *call) {
  return call != nullptr && fits(g, kShapes[I]) && built_for<I>(*call);
}

// Small tiles up to 64 rows, large ones above.
template <size_t I>
bool good_fit(const GemmArgs &g) {
  return (kShapes[I].bm == 64) == (g.m <= 64);
}

aiter_status launch(const GemmArgs &g, const GpuCall &call, const std::string &variant, const TritonShape &s) {
  const int out_kind = g.out_dtype == DType::f32 ? kGemmOutF32 : g.out_dtype == DType::f16 ? kGemmOutF16 : kGemmOutBf16;
  const NamedArg values[] = {
      NamedArg::pointer("a", g.a.data), NamedArg::pointer("w", g.w.data), NamedArg::pointer("out", g.out),
      NamedArg::pointer("bias", g.bias), NamedArg::pointer("a_scale", g.a_scale),
      NamedArg::pointer("w_scale", g.w_scale), NamedArg::number("m", g.m), NamedArg::number("n", g.n),
      NamedArg::number("k", g.k), NamedArg::number("lda", g.a.row_stride), NamedArg::number("ldw", g.w.row_stride),
      NamedArg::number("ldo", g.out_row_stride), NamedArg::number("a_batch", g.a_batch_stride),
      NamedArg::number("w_batch", g.w_batch_stride), NamedArg::number("out_batch", g.out_batch_stride),
      NamedArg::number("a_scale_batch", g.a_scale_batch_stride),
      NamedArg::number("w_scale_batch", g.w_scale_batch_stride), NamedArg::number("out_kind", out_kind),
      NamedArg::number("has_bias", g.bias != nullptr), NamedArg::number("bias_f32", g.bias_dtype == DType::f32),
      NamedArg::number("a_scale_step", g.a_scale_per_token ? 1 : 0),
      NamedArg::number("w_scale_step", g.w_scale_per_channel ? 1 : 0),
      NamedArg::number("kgroups", (g.k + kScaleBlock - 1) / kScaleBlock),
  };
  const Dim3 grid{unsigned(tiles(g, s)), unsigned(g.batch), 1};
  return launch_triton(call, "gemm", variant, grid, values, int(sizeof values / sizeof values[0]));
}

template <size_t I>
aiter_status run(const GemmArgs &g, const GpuCall *call) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return AITER_OK;
  return launch(g, *call, name_at(I), kShapes[I]);
}

bool belongs(GemmOp op, const TritonShape &s) {
  const bool sixteen = s.dtype == DType::bf16 || s.dtype == DType::f16;
  switch (op) {
    case GemmOp::a16w16:
    case GemmOp::batched_a16w16: return sixteen;
    case GemmOp::a8w8:
    case GemmOp::batched_a8w8: return !sixteen && !s.block_scaled;
    case GemmOp::a8w8_blockscale: return s.block_scaled;
  }
  return false;
}

template <size_t... I>
std::vector<Variant<GemmArgs>> all_variants(std::index_sequence<I...>) {
  return {Variant<GemmArgs>{name_at(I).c_str(), supports<I>, good_fit<I>, run<I>}...};
}

}  // namespace

void add_triton_gemm_variants(GemmOp op, std::vector<Variant<GemmArgs>> *list) {
  const std::vector<Variant<GemmArgs>> all = all_variants(std::make_index_sequence<kCount>{});
  auto at = list->begin();
  while (at != list->end() && std::string(at->name).rfind("generic.", 0) != 0) ++at;
  for (size_t i = 0; i < kCount; ++i)
    if (belongs(op, kShapes[i])) at = list->insert(at, all[i]) + 1;
}

}  // namespace gpu
}  // namespace aiter
