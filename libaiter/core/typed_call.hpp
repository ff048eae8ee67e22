// Calling a C ABI function with arguments a binder supplies by their C types:
// the framework bindings (libaiter/xla for aiter.jax, libaiter/torch for
// torch.ops.aiter) each give a Binder with one take(Tag<T>) per parameter type,
// and one row per function then reads invoke(&aiter_op, binder).
#pragma once

#include <tuple>

#include "aiter/aiter.h"

namespace aiter {

template <class T>
struct Tag {};

// A braced list is evaluated left to right, so the arguments are taken in
// parameter order.
template <class Binder, class... P>
aiter_status invoke(aiter_status (*function)(P...), Binder &binder) {
  std::tuple<P...> arguments{binder.take(Tag<P>{})...};
  return std::apply(function, arguments);
}

}  // namespace aiter
