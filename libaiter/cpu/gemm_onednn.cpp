// "cpu.onednn": oneDNN's matmul primitive as a CPU GEMM variant of
// gemm_a16w16 and batched_gemm_a16w16 (fp32, bf16, fp16 operands), as
// cuBLASLt is one on the GPU.  oneDNN is never linked: libdnnl.so.2 (the
// oneDNN 2.x C API, Debian's libdnnl2) is dlopen-ed at the first call that
// asks for it, and the variant reports "cannot run" where it does not open.
// It is offered to the tuned tables, not to the heuristic (see
// docs/performance_cpu.md for how it compares).
//
// Only the functions below are resolved, with the 2.x signatures; the
// descriptor structs, which the caller allocates in that API, are opaque
// buffers here, larger than 2.x's (696 and 2800 bytes), and the library's
// major version is checked to be 2 before any is used.  Primitives are
// created once per shape and kept (creating one takes milliseconds).  fp32
// and bf16 operands are handed over in place (oneDNN's bf16 products, like
// cpu.avx512's, read bf16 subnormals as zero where the CPU has AVX512_BF16);
// fp16 is converted to fp32 copies first (oneDNN 2.x has no fp16 matmul on
// CPUs without AVX512_FP16).  The product lands in an fp32 scratch, and the
// library's own store adds the bias and rounds once.
#include <dlfcn.h>

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/gemm_plan.hpp"
#include "cpu/vendor.hpp"

namespace aiter {
namespace cpu {
namespace {

using namespace gemm;

using Handle = void *;
using Dims = int64_t[12];  // dnnl_dims_t
struct alignas(64) MemoryDesc {
  unsigned char bytes[1024];
};
struct alignas(64) MatmulDesc {
  unsigned char bytes[4096];
};
struct ExecArg {
  int arg;
  Handle memory;
};
struct Version {
  int major, minor, patch;
  const char *hash;
  unsigned cpu_runtime, gpu_runtime;
};

// dnnl_data_type_t, dnnl_engine_kind_t, stream flags and argument indices of 2.x.
constexpr int kBf16 = 2, kF32 = 3;
constexpr int kCpuEngine = 1, kInOrderStream = 1;
constexpr int kArgSrc = 1, kArgDst = 17, kArgWeights = 33;
constexpr int kSuccess = 0;

struct Api {
  const Version *(*version)();
  int (*engine_create)(Handle *, int, size_t);
  int (*stream_create)(Handle *, Handle, unsigned);
  int (*stream_wait)(Handle);
  int (*memory_desc_init_by_strides)(MemoryDesc *, int, const int64_t *, int, const int64_t *);
  int (*matmul_desc_init)(MatmulDesc *, const MemoryDesc *, const MemoryDesc *, const MemoryDesc *,
                          const MemoryDesc *);
  int (*primitive_desc_create)(Handle *, const void *, Handle, Handle, Handle);
  int (*primitive_desc_destroy)(Handle);
  int (*primitive_create)(Handle *, Handle);
  int (*memory_create)(Handle *, const MemoryDesc *, Handle, void *);
  int (*memory_destroy)(Handle);
  int (*primitive_execute)(Handle, Handle, int, const ExecArg *);
};

template <class F>
bool resolve(void *lib, const char *name, F *fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  return *fn != nullptr;
}

struct OneDnn {
  Api api{};
  Handle engine = nullptr;
  std::string where;  // empty: not usable
};

const OneDnn &onednn() {
  static const OneDnn lib = [] {
    OneDnn o;
    void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return o;
    Api &a = o.api;
    const bool ok = resolve(h, "dnnl_version", &a.version) && resolve(h, "dnnl_engine_create", &a.engine_create) &&
                    resolve(h, "dnnl_stream_create", &a.stream_create) && resolve(h, "dnnl_stream_wait", &a.stream_wait) &&
                    resolve(h, "dnnl_memory_desc_init_by_strides", &a.memory_desc_init_by_strides) &&
                    resolve(h, "dnnl_matmul_desc_init", &a.matmul_desc_init) &&
                    resolve(h, "dnnl_primitive_desc_create", &a.primitive_desc_create) &&
                    resolve(h, "dnnl_primitive_desc_destroy", &a.primitive_desc_destroy) &&
                    resolve(h, "dnnl_primitive_create", &a.primitive_create) &&
                    resolve(h, "dnnl_memory_create", &a.memory_create) &&
                    resolve(h, "dnnl_memory_destroy", &a.memory_destroy) &&
                    resolve(h, "dnnl_primitive_execute", &a.primitive_execute);
    if (!ok || a.version()->major != 2 || a.engine_create(&o.engine, kCpuEngine, 0) != kSuccess) return o;
    Dl_info info{};
    o.where = dladdr(reinterpret_cast<void *>(a.version), &info) && info.dli_fname ? info.dli_fname : "libdnnl.so.2";
    return o;
  }();
  return lib;
}

// Matrix b of `op` as oneDNN reads it: bf16 and fp32 in place (`*ld` elements
// between rows), fp16 as an fp32 copy in `copy`.
const void *operand_rows(const Operand &op, int64_t b, int64_t rows, int64_t k, std::vector<float> &copy,
                         int64_t *ld) {
  if (op.dtype != DType::f16) {
    *ld = op.row_bytes / op.elem_bytes;
    return op.row(b, 0);
  }
  copy.resize(size_t(rows * k));
  parallel_for(rows, 16, [&](int64_t begin, int64_t end) {
    int64_t unused;
    for (int64_t r = begin; r < end; ++r) fp32_rows(op, b, r, 1, 0, k, copy.data() + r * k, k, false, &unused);
  });
  *ld = k;
  return copy.data();
}

// The memory descriptors of one product: A [M, K] rows lda apart, W^T [K, N]
// (W's rows ldw apart, read transposed), out fp32 [M, N] compact.
struct Shape {
  int64_t m, n, k, lda, ldw;
  int type;
  bool operator<(const Shape &o) const {
    return std::tie(m, n, k, lda, ldw, type) < std::tie(o.m, o.n, o.k, o.lda, o.ldw, o.type);
  }
};

struct Matmul {
  Handle primitive = nullptr;
  MemoryDesc src, weights, dst;
};

// The primitive of `s`, created at its first use and kept; null on failure.
const Matmul *matmul_for(const Shape &s) {
  static std::mutex mutex;
  static std::map<Shape, Matmul> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(s);
  if (it != cache.end()) return &it->second;
  const Api &a = onednn().api;
  Matmul mm;
  const Dims src_dims = {s.m, s.k}, src_strides = {s.lda, 1};
  const Dims w_dims = {s.k, s.n}, w_strides = {1, s.ldw};
  const Dims dst_dims = {s.m, s.n}, dst_strides = {s.n, 1};
  MatmulDesc desc;
  Handle pd = nullptr;
  const bool ok = a.memory_desc_init_by_strides(&mm.src, 2, src_dims, s.type, src_strides) == kSuccess &&
                  a.memory_desc_init_by_strides(&mm.weights, 2, w_dims, s.type, w_strides) == kSuccess &&
                  a.memory_desc_init_by_strides(&mm.dst, 2, dst_dims, kF32, dst_strides) == kSuccess &&
                  a.matmul_desc_init(&desc, &mm.src, &mm.weights, nullptr, &mm.dst) == kSuccess &&
                  a.primitive_desc_create(&pd, &desc, nullptr, onednn().engine, nullptr) == kSuccess &&
                  a.primitive_create(&mm.primitive, pd) == kSuccess;
  if (pd != nullptr) a.primitive_desc_destroy(pd);
  if (!ok) return nullptr;
  return &cache.emplace(s, mm).first->second;
}

// out = A . W^T through `mm`, on this thread's stream.
aiter_status execute(const Matmul &mm, const void *a_data, const void *w_data, float *out) {
  const Api &a = onednn().api;
  thread_local Handle stream = nullptr;
  if (stream == nullptr && a.stream_create(&stream, onednn().engine, kInOrderStream) != kSuccess)
    return fail(AITER_ERR_INTERNAL, "cpu.onednn: dnnl_stream_create failed");
  Handle src = nullptr, weights = nullptr, dst = nullptr;
  bool ok = a.memory_create(&src, &mm.src, onednn().engine, const_cast<void *>(a_data)) == kSuccess &&
            a.memory_create(&weights, &mm.weights, onednn().engine, const_cast<void *>(w_data)) == kSuccess &&
            a.memory_create(&dst, &mm.dst, onednn().engine, out) == kSuccess;
  if (ok) {
    const ExecArg args[] = {{kArgSrc, src}, {kArgWeights, weights}, {kArgDst, dst}};
    ok = a.primitive_execute(mm.primitive, stream, 3, args) == kSuccess && a.stream_wait(stream) == kSuccess;
  }
  for (Handle m : {src, weights, dst})
    if (m != nullptr) a.memory_destroy(m);
  return ok ? AITER_OK : fail(AITER_ERR_INTERNAL, "cpu.onednn: dnnl_primitive_execute failed");
}

}  // namespace

const char *onednn_location() { return onednn().where.c_str(); }

bool gemm_onednn_supports(const GemmArgs &g) {
  const bool float_operands = g.in_dtype == DType::f32 || g.in_dtype == DType::bf16 || g.in_dtype == DType::f16;
  return float_operands && !g.block_scaled && !onednn().where.empty();
}

aiter_status gemm_onednn(const GemmArgs &g, const GpuCall *) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return AITER_OK;
  std::vector<float> bias, product(size_t(g.m * g.n));
  const Plan p = make_plan(g, bias);
  populate_output(p);
  if (g.k == 0) {  // the empty sum: oneDNN has no matmul over nothing
    for (int64_t b = 0; b < p.batch; ++b) store_tile(p, b, 0, p.m, 0, p.n, product.data(), p.n);
    return AITER_OK;
  }
  std::vector<float> a_copy, w_copy;
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t lda, ldw;
    const void *a = operand_rows(p.a, b, p.m, p.k, a_copy, &lda);
    const void *w = operand_rows(p.w, b, p.n, p.k, w_copy, &ldw);
    const Matmul *mm = matmul_for(Shape{g.m, g.n, g.k, lda, ldw, g.in_dtype == DType::bf16 ? kBf16 : kF32});
    if (mm == nullptr)
      return fail(AITER_ERR_INTERNAL, "cpu.onednn: oneDNN made no matmul for M=%lld N=%lld K=%lld", (long long)g.m,
                  (long long)g.n, (long long)g.k);
    const aiter_status s = execute(*mm, a, w, product.data());
    if (s != AITER_OK) return s;
    parallel_for(p.m, 8, [&](int64_t begin, int64_t end) {
      store_tile(p, b, begin, end - begin, 0, p.n, product.data() + begin * p.n, p.n);
    });
  }
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
