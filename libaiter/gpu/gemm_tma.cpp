// Tensor maps for the warp-specialized wgmma GEMM kernels.
#include "gpu/gemm_tma.hpp"

namespace aiter {
namespace gpu {
namespace {

constexpr int64_t kMaxCoordinate = int64_t(1) << 31;  // the copies' coordinates are int32
constexpr int64_t kMaxStrideBytes = int64_t(1) << 40;

// One operand: `rows` rows of K elements, `row_stride` apart; matrices
// `batch_stride` apart (0: one matrix shared by every batch).
struct Operand {
  const void *data;
  int64_t rows, row_stride, batch_stride;
};

int64_t matrix_bytes(const Operand &o, int64_t k, int64_t size) { return (o.rows - 1) * o.row_stride * size + k * size; }

bool copyable(const Operand &o, int64_t k, int64_t batch, int64_t size) {
  const bool batched = o.batch_stride != 0 && batch > 1;
  return o.rows < kMaxCoordinate && o.row_stride * size < kMaxStrideBytes &&
         (!batched || (o.batch_stride * size >= matrix_bytes(o, k, size) && o.batch_stride * size < kMaxStrideBytes));
}

// A map over [batch][rows][k] with boxes of 128 bytes of K by `box_rows` rows.
// An unbatched operand gets one matrix and a batch stride the map accepts
// (the kernel then always reads batch 0).
aiter_status encode(const Operand &o, int64_t k, int64_t batch, int64_t size, int box_rows, Driver *driver,
                    TensorMap *map) {
  const bool batched = o.batch_stride != 0 && batch > 1;
  TensorMapSpec spec{};
  spec.base = o.data;
  spec.element_bytes = int(size);
  spec.dims[0] = uint64_t(k), spec.dims[1] = uint64_t(o.rows), spec.dims[2] = uint64_t(batched ? batch : 1);
  spec.byte_strides[0] = uint64_t(o.row_stride * size);
  spec.byte_strides[1] = uint64_t(batched ? o.batch_stride * size : o.rows * o.row_stride * size);
  spec.box[0] = uint32_t(128 / size), spec.box[1] = uint32_t(box_rows), spec.box[2] = 1;
  return driver->encode_tensor_map(spec, map);
}

Operand operand_a(const GemmArgs &g) { return {g.a.data, g.m, g.a.row_stride, g.a_batch_stride}; }
Operand operand_w(const GemmArgs &g) { return {g.w.data, g.n, g.w.row_stride, g.w_batch_stride}; }

}  // namespace

bool tma_can_copy(const GemmArgs &g) {
  const int64_t size = dtype_size(g.in_dtype);
  return g.k > 0 && g.k < kMaxCoordinate && g.batch < kMaxCoordinate && copyable(operand_a(g), g.k, g.batch, size) &&
         copyable(operand_w(g), g.k, g.batch, size);
}

aiter_status tma_params(const GemmArgs &g, const GemmParams &p, int bm, int w_rows, Driver *driver, GemmTmaParams *q) {
  const int64_t size = dtype_size(g.in_dtype);
  q->p = p;
  q->batch = int(g.batch);
  q->a_batched = g.a_batch_stride != 0 && g.batch > 1;
  q->w_batched = g.w_batch_stride != 0 && g.batch > 1;
  aiter_status s = encode(operand_a(g), g.k, g.batch, size, bm, driver, &q->a_map);
  return s == AITER_OK ? encode(operand_w(g), g.k, g.batch, size, w_rows, driver, &q->w_map) : s;
}

}  // namespace gpu
}  // namespace aiter
