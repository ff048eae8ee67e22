// "cpu.openblas": OpenBLAS's cblas_sgemm as a CPU GEMM variant of gemm_a16w16
// and batched_gemm_a16w16, as cuBLASLt is one on the GPU.  OpenBLAS is never
// linked: it is dlopen-ed at the first call that asks for it (the variant
// reports "cannot run" where no libopenblas.so.0 opens), and offered to the
// tuned tables, not to the heuristic, which has no timing that says when it
// wins (on the AVX-512 machine of docs/performance_cpu.md it does not).
// fp32 operands are handed over in place; bf16 and fp16 are converted to fp32
// copies first (Debian's OpenBLAS has no cblas_sbgemm).  The product lands in
// an fp32 scratch, and the library's own store adds the bias and rounds once.
#include <dlfcn.h>

#include <climits>
#include <string>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/gemm_plan.hpp"
#include "cpu/vendor.hpp"

namespace aiter {
namespace cpu {
namespace {

using namespace gemm;

// cblas_sgemm of an LP64 OpenBLAS (32-bit blasint), and the CBLAS enum values.
using Sgemm = void (*)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *a, int lda,
                       const float *b, int ldb, float beta, float *c, int ldc);
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

struct OpenBlas {
  Sgemm sgemm = nullptr;
  std::string where;  // the file it came from, for aiter_library_info
};

const OpenBlas &openblas() {
  static const OpenBlas lib = [] {
    OpenBlas o;
    for (const char *name : {"libopenblas.so.0", "libopenblas.so"}) {
      void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) continue;
      o.sgemm = reinterpret_cast<Sgemm>(dlsym(handle, "cblas_sgemm"));
      // Its own threads, as many as libaiter's (they run one after the other, never together).
      if (auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(handle, "openblas_set_num_threads")))
        set_threads(cpu_threads());
      Dl_info info{};
      if (o.sgemm != nullptr && dladdr(reinterpret_cast<void *>(o.sgemm), &info) && info.dli_fname)
        o.where = info.dli_fname;
      if (o.sgemm != nullptr) break;
    }
    return o;
  }();
  return lib;
}

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// Matrix b of `op` as fp32 rows: in place, or a converted copy in `copy`.
const float *fp32_matrix(const Operand &op, int64_t b, int64_t rows, int64_t k, std::vector<float> &copy,
                         int64_t *ld) {
  if (op.convert == nullptr) {
    *ld = op.row_bytes / int64_t(sizeof(float));
    return reinterpret_cast<const float *>(op.row(b, 0));
  }
  copy.resize(size_t(rows * k));
  parallel_for(rows, 16, [&](int64_t begin, int64_t end) {
    int64_t unused;
    for (int64_t r = begin; r < end; ++r) fp32_rows(op, b, r, 1, 0, k, copy.data() + r * k, k, false, &unused);
  });
  *ld = k;
  return copy.data();
}

}  // namespace

const char *openblas_location() { return openblas().where.c_str(); }

bool gemm_openblas_supports(const GemmArgs &g) {
  const bool float_operands = g.in_dtype == DType::f32 || g.in_dtype == DType::bf16 || g.in_dtype == DType::f16;
  return float_operands && !g.block_scaled && openblas().sgemm != nullptr && fits_int(g.m) && fits_int(g.n) &&
         fits_int(g.k) && fits_int(g.a.row_stride) && fits_int(g.w.row_stride);
}

aiter_status gemm_openblas(const GemmArgs &g, const GpuCall *) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return AITER_OK;
  std::vector<float> bias, a_copy, w_copy, product(size_t(g.m * g.n));
  const Plan p = make_plan(g, bias);
  populate_output(p);
  for (int64_t b = 0; b < p.batch; ++b) {
    int64_t lda, ldw;
    const float *a = fp32_matrix(p.a, b, p.m, p.k, a_copy, &lda);
    const float *w = fp32_matrix(p.w, b, p.n, p.k, w_copy, &ldw);
    if (p.k == 0)
      std::fill(product.begin(), product.end(), 0.0f);  // the empty sum, whatever BLAS makes of K = 0
    else
      openblas().sgemm(kRowMajor, kNoTrans, kTrans, int(p.m), int(p.n), int(p.k), 1.0f, a, int(std::max<int64_t>(lda, 1)),
                       w, int(std::max<int64_t>(ldw, 1)), 0.0f, product.data(), int(p.n));
    parallel_for(p.m, 8, [&](int64_t begin, int64_t end) {
      store_tile(p, b, begin, end - begin, 0, p.n, product.data() + begin * p.n, p.n);
    });
  }
  return AITER_OK;
}

}  // namespace cpu
}  // namespace aiter
