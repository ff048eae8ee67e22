// Argument checks shared by every op.  An ArgCheck records the first failure
// (status + message naming the op, the argument and what was expected); later
// checks do nothing, so an op writes its checks as one straight sequence and
// looks at ok() once.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "aiter/aiter.h"
#include "core/dtype.hpp"

namespace aiter {

constexpr int kMaxDims = 8;

// A tensor seen as `rows` rows of `cols` contiguous elements, `row_stride`
// elements apart: what row-wise ops (norms, activations, quantization) walk.
struct RowView {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_stride = 0;
};

int64_t numel(const DLTensor *t);
int64_t stride(const DLTensor *t, int dim);  // in elements, derived when strides is NULL
std::string shape_string(const DLTensor *t);

// The tensor's first element.  In integers: an empty tensor's byte_offset is
// never checked (no byte is read), and pointer arithmetic past its object is
// undefined (fuzzer seed 4166045690 case 37007: an empty topk_ids).
template <class T>
T *data_ptr(const DLTensor *t) {
  return reinterpret_cast<T *>(reinterpret_cast<uintptr_t>(t->data) + t->byte_offset);
}

class ArgCheck {
 public:
  explicit ArgCheck(const char *op) : op_(op) {}

  bool ok() const { return status_ == AITER_OK; }
  aiter_status status() const { return status_; }
  const char *op() const { return op_; }

  // A tensor that must be there: non-null, a dtype libaiter knows, 0..8 dims,
  // non-negative extents and strides, no size overflow, data unless empty,
  // a device libaiter can run.
  ArgCheck &tensor(const DLTensor *t, const char *name);
  // The same for a tensor that may be NULL.
  ArgCheck &optional(const DLTensor *t, const char *name);

  ArgCheck &ndim(const DLTensor *t, const char *name, int expected);
  ArgCheck &min_ndim(const DLTensor *t, const char *name, int expected);
  ArgCheck &dtype(const DLTensor *t, const char *name, std::initializer_list<DType> allowed);
  ArgCheck &same_dtype(const DLTensor *t, const char *name, const DLTensor *ref, const char *ref_name);
  // t.shape[dim] == expected; `what` explains where the number comes from.
  ArgCheck &dim(const DLTensor *t, const char *name, int dim, int64_t expected, const char *what);
  ArgCheck &same_shape(const DLTensor *t, const char *name, const DLTensor *ref, const char *ref_name);
  ArgCheck &same_device(const DLTensor *t, const char *name, const DLTensor *ref, const char *ref_name);
  ArgCheck &contiguous(const DLTensor *t, const char *name);
  // Last dim contiguous and the leading dims foldable into one row stride.
  ArgCheck &rows(const DLTensor *t, const char *name, RowView *view);
  // Unit stride along the last dim (the other strides may be anything).
  ArgCheck &unit_last_stride(const DLTensor *t, const char *name);
  // An index tensor (positions, block table, cu_seqlens, context lengths, slots)
  // and an output of the same op share no byte: its values were checked before
  // the op, and the op's own writes must not change them while it reads them.
  ArgCheck &disjoint(const DLTensor *index, const char *index_name, const DLTensor *output,
                     const char *output_name);
  // A free-form condition; the message should name the argument.
  ArgCheck &require(bool condition, aiter_status status, const char *fmt, ...)
      __attribute__((format(printf, 4, 5)));

 private:
  ArgCheck &failed(aiter_status status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
  const char *op_;
  aiter_status status_ = AITER_OK;
};

}  // namespace aiter
