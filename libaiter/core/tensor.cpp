#include "core/tensor.hpp"

#include <cstdarg>
#include <cstdio>

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
  for (int i = t->ndim - 1; i > dim; --i) s *= t->shape[i];
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

static const char *device_name(DLDeviceType type) {
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

// Checks extents, strides and the byte size of the memory the tensor spans.
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
  const int size = dtype_size(dtype_of(t->dtype));
  int64_t bytes;
  if (__builtin_mul_overflow(span + 1, int64_t(size), &bytes)) return "byte size overflows int64";
  return nullptr;
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
  const DLDeviceType dev = t->device.device_type;
  if (dev != kDLCPU && dev != kDLCUDA && dev != kDLROCM)
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
  for (DType a : allowed) {
    if (a == dt) return *this;
    if (!names.empty()) names += ", ";
    names += dtype_name(a);
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
  if (t->device.device_type == ref->device.device_type && t->device.device_id == ref->device.device_id) return *this;
  return failed(AITER_ERR_INVALID_ARGUMENT, "%s: expected the device of %s (%s:%d), got %s:%d", name, ref_name,
                device_name(ref->device.device_type), int(ref->device.device_id),
                device_name(t->device.device_type), int(t->device.device_id));
}

ArgCheck &ArgCheck::contiguous(const DLTensor *t, const char *name) {
  if (!ok() || t->strides == nullptr || numel(t) == 0) return *this;  // empty: nothing to lay out
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
  // An empty tensor has no layout to check (NumPy gives its empty arrays zero strides).
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
  view->rows = 1;
  view->row_stride = view->cols;
  if (numel(t) == 0) {  // no rows to walk, whatever the strides say
    view->rows = 0;
    return *this;
  }
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
