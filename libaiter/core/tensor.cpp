#include "core/tensor.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "core/caller_values.hpp"
#include "core/error.hpp"

namespace aiter {

int64_t numel(const DLTensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

int64_t stride(const DLTensor *t, int dim) {
  if (t->strides != nullptr) return t->strides[dim];
  int64_t s = 1;
  // Compact strides of a checked non-empty tensor never overflow (they divide its
  // element count); those of an empty one, e.g. [0, 2^40, 2^40], may, and then
  // address nothing: 0 stands for them.
  for (int i = t->ndim - 1; i > dim; --i)
    if (__builtin_mul_overflow(s, t->shape[i], &s)) return 0;
  return s;
}

std::string shape_string(const DLTensor *t) {
  std::string s = "[";
  for (int i = 0; i < t->ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(t->shape[i]);
  }
  return s + "]";
}

static const char *device_name(int32_t type) {
  switch (type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda";
    case kDLROCM: return "rocm";
    default: return "other";
  }
}

ArgCheck &ArgCheck::failed(aiter_status status, const char *fmt, ...) {
  char message[768];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  status_ = fail(status, "%s: %s", op_, message);
  return *this;
}

ArgCheck &ArgCheck::require(bool condition, aiter_status status, const char *fmt, ...) {
  if (!ok() || condition) return *this;
  char message[768];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  return failed(status, "%s", message);
}

// Checks extents, strides and the bytes the tensor spans: every offset an op can
// form from them (element offsets, times the element size, plus the data address)
// must be representable, so that no computation in a kernel wraps around.
static const char *layout_problem(const DLTensor *t, int64_t *bad_dim) {
  int64_t elems = 1, span = 0;
  for (int i = 0; i < t->ndim; ++i) {
    *bad_dim = i;
    if (t->shape[i] < 0) return "negative extent";
    if (__builtin_mul_overflow(elems, t->shape[i], &elems)) return "element count overflows int64";
  }
  for (int i = 0; i < t->ndim && elems > 0; ++i) {
    *bad_dim = i;
    const int64_t s = stride(t, i);
    if (s < 0) return "negative stride (reverse views are not supported)";
    int64_t reach;
    if (__builtin_mul_overflow(t->shape[i] - 1, s, &reach) || __builtin_add_overflow(span, reach, &span))
      return "strides overflow int64";
  }
  *bad_dim = t->ndim > 0 ? t->ndim - 1 : 0;
  if (elems == 0) return nullptr;
  const int size = dtype_size(dtype_of(t->dtype));
  int64_t count, bytes;
  uintptr_t end;
  if (__builtin_add_overflow(span, int64_t(1), &count) || __builtin_mul_overflow(count, int64_t(size), &bytes))
    return "byte size overflows int64";
  if (t->byte_offset > uint64_t(INT64_MAX) ||
      __builtin_add_overflow(reinterpret_cast<uintptr_t>(t->data), t->byte_offset, &end) ||
      __builtin_add_overflow(end, uintptr_t(bytes), &end))
    return "data + byte_offset + the bytes spanned overflow the address space";
  return nullptr;
}

// Where the tensor's elements lie: [*begin, *end) in bytes of its device's
// address space; empty for a tensor with no elements.  For checked tensors.
static void byte_range(const DLTensor *t, uintptr_t *begin, uintptr_t *end) {
  *begin = *end = 0;
  if (numel(t) == 0) return;
  int64_t span = 0;
  for (int i = 0; i < t->ndim; ++i) span += (t->shape[i] - 1) * stride(t, i);
  *begin = reinterpret_cast<uintptr_t>(t->data) + uintptr_t(t->byte_offset);
  *end = *begin + uintptr_t(span + 1) * uintptr_t(dtype_size(dtype_of(t->dtype)));
}

ArgCheck &ArgCheck::tensor(const DLTensor *t, const char *name) {
  if (!ok()) return *this;
  if (t == nullptr) return failed(AITER_ERR_INVALID_ARGUMENT, "%s: expected a tensor, got NULL", name);
  if (t->ndim < 0 || t->ndim > kMaxDims)
    return failed(AITER_ERR_INVALID_ARGUMENT, "%s: expected 0 to %d dims, got ndim %d", name, kMaxDims, int(t->ndim));
  if (t->ndim > 0 && t->shape == nullptr)
    return failed(AITER_ERR_INVALID_ARGUMENT, "%s: shape is NULL with ndim %d", name, int(t->ndim));
  if (dtype_of(t->dtype) == DType::unknown)
    return failed(AITER_ERR_UNSUPPORTED_DTYPE, "%s: unsupported dtype (code %d, bits %d, lanes %d)", name,
                  int(t->dtype.code), int(t->dtype.bits), int(t->dtype.lanes));
  int64_t bad_dim = 0;
  if (const char *problem = layout_problem(t, &bad_dim))
    return failed(AITER_ERR_INVALID_ARGUMENT, "%s: %s at dim %lld (shape %s)", name, problem,
                  (long long)bad_dim, shape_string(t).c_str());
  if (t->data == nullptr && numel(t) > 0)
    return failed(AITER_ERR_INVALID_ARGUMENT, "%s: data is NULL for a non-empty tensor", name);
  const int size = dtype_size(dtype_of(t->dtype));
  const uintptr_t first = reinterpret_cast<uintptr_t>(t->data) + uintptr_t(t->byte_offset);
  if (numel(t) > 0 && first % uintptr_t(size) != 0)
    return failed(AITER_ERR_INVALID_ARGUMENT,
                  "%s: data + byte_offset (%llu) must be aligned to the %d bytes of a %s element", name,
                  (unsigned long long)t->byte_offset, size, dtype_name(dtype_of(t->dtype)));
  const int32_t dev = device_type_code(t->device);
  if (!runnable_device_type(dev))
    return failed(AITER_ERR_INVALID_ARGUMENT, "%s: device type %d is not supported (expected cpu, cuda or rocm)",
                  name, int(dev));
  return *this;
}

ArgCheck &ArgCheck::optional(const DLTensor *t, const char *name) {
  return t == nullptr ? *this : tensor(t, name);
}

ArgCheck &ArgCheck::ndim(const DLTensor *t, const char *name, int expected) {
  if (!ok() || t->ndim == expected) return *this;
  return failed(AITER_ERR_INVALID_ARGUMENT, "%s: expected %d dims, got %d (shape %s)", name, expected,
                int(t->ndim), shape_string(t).c_str());
}

ArgCheck &ArgCheck::min_ndim(const DLTensor *t, const char *name, int expected) {
  if (!ok() || t->ndim >= expected) return *this;
  return failed(AITER_ERR_INVALID_ARGUMENT, "%s: expected at least %d dims, got %d", name, expected, int(t->ndim));
}

ArgCheck &ArgCheck::dtype(const DLTensor *t, const char *name, std::initializer_list<DType> allowed) {
  if (!ok()) return *this;
  const DType dt = dtype_of(t->dtype);
  std::string names;
  for (const DType *a = allowed.begin(); a != allowed.end(); ++a) {
    if (*a == dt) return *this;
    if (std::find(allowed.begin(), a, *a) != a) continue;  // {x's dtype, f32} may name one twice
    if (!names.empty()) names += ", ";
    names += dtype_name(*a);
  }
  return failed(AITER_ERR_UNSUPPORTED_DTYPE, "%s: expected dtype %s, got %s", name, names.c_str(), dtype_name(dt));
}

ArgCheck &ArgCheck::same_dtype(const DLTensor *t, const char *name, const DLTensor *ref, const char *ref_name) {
  if (!ok() || dtype_of(t->dtype) == dtype_of(ref->dtype)) return *this;
  return failed(AITER_ERR_UNSUPPORTED_DTYPE, "%s: expected the dtype of %s (%s), got %s", name, ref_name,
                dtype_name(dtype_of(ref->dtype)), dtype_name(dtype_of(t->dtype)));
}

ArgCheck &ArgCheck::dim(const DLTensor *t, const char *name, int d, int64_t expected, const char *what) {
  if (!ok()) return *this;
  if (d < 0) d += t->ndim;
  if (d >= 0 && d < t->ndim && t->shape[d] == expected) return *this;
  return failed(AITER_ERR_INVALID_ARGUMENT, "%s: expected shape[%d] == %lld (%s), got shape %s", name, d,
                (long long)expected, what, shape_string(t).c_str());
}

ArgCheck &ArgCheck::same_shape(const DLTensor *t, const char *name, const DLTensor *ref, const char *ref_name) {
  if (!ok()) return *this;
  bool same = t->ndim == ref->ndim;
  for (int i = 0; same && i < t->ndim; ++i) same = t->shape[i] == ref->shape[i];
  if (same) return *this;
  return failed(AITER_ERR_INVALID_ARGUMENT, "%s: expected the shape of %s %s, got %s", name, ref_name,
                shape_string(ref).c_str(), shape_string(t).c_str());
}

ArgCheck &ArgCheck::same_device(const DLTensor *t, const char *name, const DLTensor *ref, const char *ref_name) {
  if (!ok() || t == nullptr) return *this;
  const int32_t type = device_type_code(t->device), ref_type = device_type_code(ref->device);
  if (type == ref_type && t->device.device_id == ref->device.device_id) return *this;
  return failed(AITER_ERR_INVALID_ARGUMENT, "%s: expected the device of %s (%s:%d), got %s:%d", name, ref_name,
                device_name(ref_type), int(ref->device.device_id), device_name(type), int(t->device.device_id));
}

ArgCheck &ArgCheck::disjoint(const DLTensor *index, const char *index_name, const DLTensor *output,
                             const char *output_name) {
  if (!ok() || index == nullptr || output == nullptr) return *this;
  uintptr_t index_begin, index_end, output_begin, output_end;
  byte_range(index, &index_begin, &index_end);
  byte_range(output, &output_begin, &output_end);
  if (index_begin == index_end || output_begin == output_end) return *this;
  if (index_end <= output_begin || output_end <= index_begin) return *this;
  return failed(AITER_ERR_INVALID_ARGUMENT,
                "%s: overlaps the memory of %s, which this op writes; index tensors must not alias an output", index_name,
                output_name);
}

ArgCheck &ArgCheck::contiguous(const DLTensor *t, const char *name) {
  if (!ok() || t->strides == nullptr || numel(t) == 0) return *this;
  int64_t expected = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] != 1 && t->strides[i] != expected)
      return failed(AITER_ERR_INVALID_ARGUMENT, "%s: expected a compact row-major tensor, got stride %lld at dim %d",
                    name, (long long)t->strides[i], i);
    expected *= t->shape[i];
  }
  return *this;
}

ArgCheck &ArgCheck::unit_last_stride(const DLTensor *t, const char *name) {
  if (!ok() || t->ndim == 0 || numel(t) == 0) return *this;
  const int last = t->ndim - 1;
  if (t->shape[last] <= 1 || stride(t, last) == 1) return *this;
  return failed(AITER_ERR_INVALID_ARGUMENT, "%s: expected unit stride along the last dim, got %lld", name,
                (long long)stride(t, last));
}

ArgCheck &ArgCheck::rows(const DLTensor *t, const char *name, RowView *view) {
  if (!ok()) return *this;
  unit_last_stride(t, name);
  if (!ok()) return *this;
  const int last = t->ndim - 1;
  view->cols = t->ndim > 0 ? t->shape[last] : 1;
  if (numel(t) == 0) {  // nothing to walk, whatever the strides say
    view->rows = 0;
    view->row_stride = view->cols;
    return *this;
  }
  view->rows = 1;
  view->row_stride = view->cols;
  bool first = true;
  for (int i = last - 1; i >= 0; --i) {
    if (t->shape[i] == 1) continue;  // a unit dim has no say in the layout
    const int64_t s = stride(t, i);
    if (first) {
      view->row_stride = s;
      first = false;
    } else if (s != view->row_stride * view->rows) {
      return failed(AITER_ERR_INVALID_ARGUMENT,
                    "%s: leading dims must fold into one row stride; dim %d has stride %lld, expected %lld "
                    "(copy the tensor to a contiguous one)",
                    name, i, (long long)s, (long long)(view->row_stride * view->rows));
    }
    view->rows *= t->shape[i];
  }
  if (view->rows > 1 && view->row_stride < view->cols)
    return failed(AITER_ERR_INVALID_ARGUMENT, "%s: rows overlap (row stride %lld < row length %lld)", name,
                  (long long)view->row_stride, (long long)view->cols);
  return *this;
}

}  // namespace aiter
