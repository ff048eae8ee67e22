// cuBLASLt / hipBLASLt as variants of the GEMM ops (see gemm_vendor.hpp): the
// checks a call must pass, the heuristic's rule, and the call itself.
#include "gpu/vendor_blas/gemm_vendor.hpp"

#include <climits>
#include <string>
#include <utility>

#include "gpu/launch.hpp"
#include "gpu/vendor_blas/blaslt_plan.hpp"
#include "gpu/vendor_blas/blaslt_workspace.hpp"
#include "tuning/config.hpp"

namespace aiter {
namespace gpu {
namespace {

using blas::BlasLtApi;
using blas::MatmulShape;
using blas::Plan;
using blas::Scaling;
using blas::Vendor;

enum class Kind { a16w16, a8w8, blockscale };

struct VendorKernel {
  const Vendor *vendor;
  DType dtype;
  Kind kind;
  int rank = 0;  // which of the plan's algorithms: 0 is the library heuristic's choice
};

// fp8 only as e4m3 (cuBLASLt has no e5m2 x e5m2 product; scaled int8 with a
// bf16 output is in neither library), e4m3fnuz for AMD's CDNA 3.  The 8-bit
// kinds also offer the heuristic's second to fourth algorithms (".alg2" ...),
// for the tuner: its first one is what PyTorch runs, so only another can beat it.
constexpr VendorKernel kVendorKernels[] = {
    {&blas::kCublasLt, DType::bf16, Kind::a16w16},         {&blas::kCublasLt, DType::f16, Kind::a16w16},
    {&blas::kCublasLt, DType::f32, Kind::a16w16},          {&blas::kCublasLt, DType::e4m3fn, Kind::a8w8},
    {&blas::kCublasLt, DType::e4m3fn, Kind::a8w8, 1},      {&blas::kCublasLt, DType::e4m3fn, Kind::a8w8, 2},
    {&blas::kCublasLt, DType::e4m3fn, Kind::a8w8, 3},      {&blas::kCublasLt, DType::e4m3fn, Kind::blockscale},
    {&blas::kCublasLt, DType::e4m3fn, Kind::blockscale, 1}, {&blas::kCublasLt, DType::e4m3fn, Kind::blockscale, 2},
    {&blas::kCublasLt, DType::e4m3fn, Kind::blockscale, 3}, {&blas::kHipblasLt, DType::bf16, Kind::a16w16},
    {&blas::kHipblasLt, DType::f16, Kind::a16w16},         {&blas::kHipblasLt, DType::f32, Kind::a16w16},
    {&blas::kHipblasLt, DType::e4m3fn, Kind::a8w8},        {&blas::kHipblasLt, DType::e4m3fn, Kind::a8w8, 1},
    {&blas::kHipblasLt, DType::e4m3fn, Kind::a8w8, 2},     {&blas::kHipblasLt, DType::e4m3fn, Kind::a8w8, 3},
    {&blas::kHipblasLt, DType::e4m3fnuz, Kind::a8w8},      {&blas::kHipblasLt, DType::e4m3fnuz, Kind::a8w8, 1},
    {&blas::kHipblasLt, DType::e4m3fnuz, Kind::a8w8, 2},   {&blas::kHipblasLt, DType::e4m3fnuz, Kind::a8w8, 3},
    {&blas::kHipblasLt, DType::e4m3fn, Kind::blockscale},  {&blas::kHipblasLt, DType::e4m3fn, Kind::blockscale, 1},
    {&blas::kHipblasLt, DType::e4m3fn, Kind::blockscale, 2}, {&blas::kHipblasLt, DType::e4m3fn, Kind::blockscale, 3},
    {&blas::kHipblasLt, DType::e4m3fnuz, Kind::blockscale}, {&blas::kHipblasLt, DType::e4m3fnuz, Kind::blockscale, 1},
    {&blas::kHipblasLt, DType::e4m3fnuz, Kind::blockscale, 2},
    {&blas::kHipblasLt, DType::e4m3fnuz, Kind::blockscale, 3},
};
static_assert(blas::kPlanAlgos == 4, "the .alg2 to .alg4 variants above name a plan's algorithms 2 to 4");
constexpr size_t kVendorCount = std::size(kVendorKernels);

std::string name_of(const VendorKernel &k) {
  return std::string(k.vendor->variant_prefix) + "." + dtype_tag(k.dtype) + (k.kind == Kind::blockscale ? ".bs" : "") +
         (k.rank > 0 ? ".alg" + std::to_string(k.rank + 1) : "");
}

const std::string &vendor_name(size_t i) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const VendorKernel &k : kVendorKernels) v.push_back(name_of(k));
    return v;
  }();
  return names[i];
}

// The largest power of two (at most 256) dividing the address and every byte step.
uint32_t alignment(const void *p, std::initializer_list<int64_t> steps) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p) | 256;
  for (int64_t s : steps) bits |= uint64_t(s);
  return uint32_t(bits & (~bits + 1));
}

bool fits_int32(const GemmArgs &g) {
  for (int64_t v : {g.m, g.n, g.k, g.a.row_stride, g.w.row_stride, g.out_row_stride, g.batch})
    if (v > INT32_MAX) return false;
  return true;
}

// The library reads A's 1 x 128 scales M-contiguous ([K / 128, M], PyTorch's
// "strides (1, M)"): a column-major a_scale goes straight in, as does a single
// row; a row-major one is transposed into the workspace first.
bool a_scales_transposed(const GemmArgs &g) { return g.m > 1 && !g.a_scale_column_major(); }

// cuBLASLt's block scales: whole 128-wide K groups, rows of four groups (16
// bytes, as PyTorch requires of them), the transposed A scales (where they
// need it) within the workspace, 16-byte aligned scale pointers.
bool block_scales_fit(const GemmArgs &g) {
  const int64_t groups = g.k / 128;
  const bool room = !a_scales_transposed(g) || uint64_t(g.m) * uint64_t(groups) * 4 <= blas::kScaleBytes;
  return g.batch == 1 && g.k % 128 == 0 && groups % 4 == 0 && room && alignment(g.a_scale, {}) >= 16 &&
         alignment(g.w_scale, {}) >= 16;
}

Scaling scaling(bool per_element) { return per_element ? Scaling::outer_vec : Scaling::scalar; }

MatmulShape shape_of(const VendorKernel &k, const GemmArgs &g, const blas::Workspace &ws) {
  const int64_t size = dtype_size(g.in_dtype), out_size = dtype_size(g.out_dtype);
  MatmulShape s{};
  s.in = g.in_dtype, s.out = g.out_dtype, s.bias = g.bias ? g.bias_dtype : DType::unknown;
  if (k.kind == Kind::a8w8)
    s.w_scale = scaling(g.w_scale_per_channel), s.a_scale = scaling(g.a_scale_per_token);
  if (k.kind == Kind::blockscale) s.w_scale = Scaling::blk128x128, s.a_scale = Scaling::vec128;
  s.m = g.m, s.n = g.n, s.k = g.k;
  s.lda = g.a.row_stride, s.ldw = g.w.row_stride, s.ldo = g.out_row_stride;
  s.batch = g.batch, s.a_batch = g.a_batch_stride, s.w_batch = g.w_batch_stride, s.o_batch = g.out_batch_stride;
  s.align_a = alignment(g.a.data, {s.lda * size, s.a_batch * size});
  s.align_w = alignment(g.w.data, {s.ldw * size, s.w_batch * size});
  s.align_o = alignment(g.out, {s.ldo * out_size, s.o_batch * out_size});
  s.workspace_bytes = ws.blas ? blas::kBlasWorkspaceBytes : 0;
  s.w_scale_ptr = g.w_scale;
  s.a_scale_ptr = k.kind == Kind::blockscale && a_scales_transposed(g) ? static_cast<const void *>(ws.scales) : g.a_scale;
  return s;
}

// Runs `body(plan, handle, workspace)` with the call's device current and the
// plan cache locked; UNSUPPORTED_SHAPE when the library has no algorithm.
template <class Body>
aiter_status with_plan(const VendorKernel &k, const BlasLtApi &api, const GemmArgs &g, const GpuCall &call,
                       Body &&body) {
  DeviceScope scope(call.device);
  if (scope.status() != AITER_OK) return scope.status();
  const int slot = device_slot(call.device);
  const blas::Workspace ws = blas::workspace_for(api, slot, call.stream);
  if (k.kind == Kind::blockscale && a_scales_transposed(g) && ws.scales == nullptr)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "%s: no workspace on this stream (first used while being captured)",
                k.vendor->name);
  std::unique_lock<std::mutex> lock;
  const Plan *plan = blas::plan_for(*k.vendor, api, slot, shape_of(k, g, ws), &lock);
  if (plan == nullptr)
    return fail(AITER_ERR_UNSUPPORTED_SHAPE, "%s has no algorithm for this shape, dtype and scaling",
                k.vendor->name);
  return body(*plan, blas::handle_for(*k.vendor, api, slot), ws);
}

bool can_run(const VendorKernel &k, const GemmArgs &g, const GpuCall *call) {
  if (call == nullptr || call->device.device_type != k.vendor->device_type || device_slot(call->device) < 0)
    return false;
  if (g.in_dtype != k.dtype || g.block_scaled != (k.kind == Kind::blockscale) || g.k == 0 || !fits_int32(g))
    return false;
  if (k.kind == Kind::a8w8 && g.batch > 1 && (g.a_scale_per_token || g.w_scale_per_channel))
    return false;  // the libraries take no batch stride for scale vectors
  if (k.kind == Kind::blockscale && !block_scales_fit(g)) return false;
  if (!vendor_blas_enabled()) return false;
  const BlasLtApi *api = blas::blaslt_api(*k.vendor);
  if (api == nullptr) return false;
  if (g.m == 0 || g.n == 0) return true;  // nothing to compute
  const aiter_status s = with_plan(k, *api, g, *call, [&](const Plan &p, void *, const blas::Workspace &) {
    return k.rank < p.algo_count ? AITER_OK : fail(AITER_ERR_UNSUPPORTED_SHAPE, "fewer algorithms");
  });
  if (s != AITER_OK) clear_error();
  return s == AITER_OK;
}

template <class T>
bool set_pointer(const BlasLtApi &api, const Plan &p, int attribute, T *pointer) {
  const void *value = pointer;
  return api.matmul_desc_set(p.desc, attribute, &value, sizeof(value)) == 0;
}

// The 1 x 128 scales of A, transposed into the workspace ([K / 128, M]).  No
// B operand (beta 0): cuBLASLt 13.1 rejected this call when it passed A as B
// too ("Matrix pointers A and B cannot point to the same matrix", H100,
// 2026-11-27).
blas::Status transpose_a_scales(const BlasLtApi &api, const Plan &p, void *handle, const GemmArgs &g, float *dst,
                                void *stream) {
  const float one = 1.0f, zero = 0.0f;
  return api.transform(handle, p.scale_t, &one, g.a_scale, p.scale_src, &zero, nullptr, nullptr, dst, p.scale_dst,
                       stream);
}

aiter_status run_vendor(const VendorKernel &k, const GemmArgs &g, const GpuCall &call) {
  if (g.m == 0 || g.n == 0) return AITER_OK;
  const BlasLtApi *api = blas::blaslt_api(*k.vendor);
  if (api == nullptr) return fail(AITER_ERR_NO_KERNEL, "%s", blas::unavailable_reason(*k.vendor));
  const Vendor &v = *k.vendor;
  return with_plan(k, *api, g, call, [&](const Plan &p, void *handle, const blas::Workspace &ws) {
    if (k.rank >= p.algo_count)
      return fail(AITER_ERR_UNSUPPORTED_SHAPE, "%s offered %d algorithms here", v.name, p.algo_count);
    bool ok = handle != nullptr;
    if (ok && g.bias) ok = set_pointer(*api, p, v.desc.bias_pointer, g.bias);
    const float *a_scale = g.a_scale;
    if (ok && k.kind == Kind::blockscale && a_scales_transposed(g)) {
      ok = transpose_a_scales(*api, p, handle, g, ws.scales, call.stream) == 0;
      a_scale = ws.scales;
    }
    if (ok && k.kind != Kind::a16w16)  // the library's A is our W
      ok = set_pointer(*api, p, v.desc.a_scale_pointer, g.w_scale) &&
           set_pointer(*api, p, v.desc.b_scale_pointer, a_scale);
    if (!ok) return fail(AITER_ERR_DEVICE, "%s: setting up the call failed", v.name);
    const float one = 1.0f, zero = 0.0f;
    const blas::Status s =
        api->matmul(handle, p.desc, &one, g.w.data, p.a, g.a.data, p.b, &zero, g.out, p.d, g.out, p.d, p.algo[k.rank],
                    ws.blas, ws.blas ? blas::kBlasWorkspaceBytes : 0, call.stream);
    if (s != 0) return fail(AITER_ERR_DEVICE, "%s: matmul failed with status %d", v.name, s);
    return AITER_OK;
  });
}

// Where the library is the heuristic's choice for a shape without a tuned row.
// NVIDIA, 16-bit: above 8 rows, where libaiter's own kernels trailed cuBLAS
// untuned on the H100 (docs/performance_gemm.md, "Vendor BLAS variants": at
// 9-16 rows the skinny kernels ran 0.79-1.26x of cuBLAS, at 17-1024 rows the
// tiles 0.46-1.02x, cuBLASLt itself 0.96-1.01x everywhere); fp32 inputs always
// (no tensor-core kernel of ours).  Block-scaled fp8 from kBlockScaledRows rows:
// libaiter's tiles ran 0.83x of F.scaled_mm untuned at M = 256-512 and 0.78x
// from 1024 (tuned: 0.90x and 0.85x; H100, 2026-11-23), where this call, which
// is F.scaled_mm's own cuBLASLt call, ran 0.82-0.98x per M with row-major
// a_scale (transposed first) and 0.99-1.00x column-major (geometric means;
// H100, 2026-11-27 10:20 UTC).
// Other fp8: fp8_last_wave_mostly_idle below.  AMD: always, as libaiter has
// no matrix-core GEMM there yet (not measured: no AMD GPU at hand).
constexpr int64_t kBlockScaledRows = 256;

// fp8 with per-token / per-channel (or per-tensor) scales: where the 128-row
// tiles libaiter's heuristic takes run on the H100's multiprocessors in two to
// kMaxTailWaves waves, the last less than half full.  The persistent kernel
// then spends a whole tile's time with most of the GPU idle, and that last
// wave is a quarter of the call or more.  Basis (the untuned sweep, 336 shapes
// at M = 1-8192 against torch._scaled_mm rowwise, H100, 2026-11-27 12:27 UTC):
// the 12 untuned shapes this takes ran 0.84-1.03x (0.84x at 160 tiles, 0.88x
// at 296, 0.95-0.97x at 320, 0.96-1.01x at 432-448) where cuBLASLt ran
// 0.97-1.01x; ours was faster on 4 of them, by 0.5-3.2%.  Verified on an
// H200 (the same 132 multiprocessors), 12:44 UTC: those 12 ran 0.997-1.011x
// with the rule, 0.843-0.995x on libaiter's kernels alone, and no untuned
// shape of the sweep fell below 0.95x (worst 0.977x).  Up to 64 rows
// (64-row tiles: at most 128 flops per byte of W, bound by streaming W) the
// idle slots cost little: ours ran 1.05-2.14x there whatever the fill.
constexpr int64_t kMaxTailWaves = 4;
bool fp8_last_wave_mostly_idle(const GemmArgs &g) {
  const TileWaves t = heuristic_tile_waves(g);
  return t.bm == 128 && t.waves >= 2 && t.waves <= kMaxTailWaves && 2 * t.last_wave < t.sms;
}

bool preferred(const VendorKernel &k, const GemmArgs &g) {
  if (k.rank > 0) return false;  // for the tuner only
  if (k.vendor->device_type == kDLROCM) return true;
  if (k.kind == Kind::blockscale) return g.m >= kBlockScaledRows;
  if (k.kind == Kind::a8w8) return fp8_last_wave_mostly_idle(g);
  return k.kind == Kind::a16w16 && (g.in_dtype == DType::f32 || g.m > 8);
}

template <size_t I>
bool supports(const GemmArgs &g, const GpuCall *call) {
  return can_run(kVendorKernels[I], g, call);
}
template <size_t I>
bool good_fit(const GemmArgs &g) {
  return preferred(kVendorKernels[I], g);
}
template <size_t I>
aiter_status run(const GemmArgs &g, const GpuCall *call) {
  return run_vendor(kVendorKernels[I], g, *call);
}

template <size_t... I>
std::vector<Variant<GemmArgs>> all_vendor_variants(std::index_sequence<I...>) {
  return {Variant<GemmArgs>{vendor_name(I).c_str(), supports<I>, good_fit<I>, run<I>}...};
}

Kind kind_of(GemmOp op) {
  switch (op) {
    case GemmOp::a8w8:
    case GemmOp::batched_a8w8: return Kind::a8w8;
    case GemmOp::a8w8_blockscale: return Kind::blockscale;
    default: return Kind::a16w16;
  }
}

}  // namespace

std::vector<Variant<GemmArgs>> vendor_gemm_variants(GemmOp op) {
  static const std::vector<Variant<GemmArgs>> all = all_vendor_variants(std::make_index_sequence<kVendorCount>{});
  std::vector<Variant<GemmArgs>> mine;
  for (size_t i = 0; i < kVendorCount; ++i)
    if (kVendorKernels[i].kind == kind_of(op)) mine.push_back(all[i]);
  return mine;
}

}  // namespace gpu
}  // namespace aiter
