// parse_triton_params / pack_triton_args: a Triton kernel's arguments packed in
// the order and types of the manifest's args column, and every mismatch refused.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../c/harness.h"
#include "aiter/aiter.h"
#include "gpu/triton_args.hpp"

using aiter::gpu::ArgType;
using aiter::gpu::NamedArg;
using aiter::gpu::pack_triton_args;
using aiter::gpu::parse_triton_params;
using aiter::gpu::TritonArgs;
using aiter::gpu::TritonParam;

namespace {

std::vector<TritonParam> parse(const std::string &column) {
  std::vector<TritonParam> params;
  std::string error;
  CHECK(parse_triton_params(column, &params, &error));
  return params;
}

template <class T>
T read_slot(const TritonArgs &args, int i) {
  T v;
  std::memcpy(&v, args.slots[i], sizeof v);
  return v;
}

void packs_in_the_kernels_order() {
  // The values come in another order than the kernel's: the layout decides.
  const auto params = parse("out:ptr,m:i32,ld:i64,a:ptr,scratch:ptr,scratch:ptr");
  CHECK(params.size() == 6 && params[1].type == ArgType::i32 && params[2].type == ArgType::i64);
  int dummy_a = 0, dummy_out = 0;
  const NamedArg values[] = {NamedArg::pointer("a", &dummy_a), NamedArg::number("ld", int64_t(1) << 40),
                             NamedArg::number("m", -7), NamedArg::pointer("out", &dummy_out)};
  TritonArgs args;
  CHECK(pack_triton_args("k", params, values, 4, &args) == AITER_OK);
  CHECK(args.count == 6);
  CHECK(read_slot<const void *>(args, 0) == &dummy_out);
  CHECK(read_slot<int32_t>(args, 1) == -7);
  CHECK(read_slot<int64_t>(args, 2) == int64_t(1) << 40);
  CHECK(read_slot<const void *>(args, 3) == &dummy_a);
  CHECK(read_slot<const void *>(args, 4) == nullptr && read_slot<const void *>(args, 5) == nullptr);
  // Every slot is its own 8 bytes: the driver reads each through its pointer.
  for (int i = 1; i < args.count; ++i)
    CHECK(static_cast<const char *>(args.slots[i]) - static_cast<const char *>(args.slots[i - 1]) == 8);
}

void refuses_mismatches() {
  int x = 0;
  TritonArgs args;
  const NamedArg values[] = {NamedArg::pointer("a", &x), NamedArg::number("m", int64_t(1) << 31)};
  CHECK(pack_triton_args("k", parse("a:ptr,n:i32"), values, 2, &args) == AITER_ERR_INTERNAL);  // no n
  CHECK(std::strstr(aiter_last_error(), "'n'") != nullptr);
  CHECK(pack_triton_args("k", parse("a:i64"), values, 2, &args) == AITER_ERR_INTERNAL);  // pointer for an integer
  CHECK(pack_triton_args("k", parse("m:ptr"), values, 2, &args) == AITER_ERR_INTERNAL);  // integer for a pointer
  CHECK(pack_triton_args("k", parse("m:i32"), values, 2, &args) == AITER_ERR_INTERNAL);  // 2^31 is no i32
  CHECK(std::strstr(aiter_last_error(), "32 bits") != nullptr);
  CHECK(pack_triton_args("k", parse("m:i64"), values, 2, &args) == AITER_OK);
  CHECK(pack_triton_args("k", parse("m:f32"), values, 2, &args) == AITER_ERR_INTERNAL);  // integer for a float
  const NamedArg real[] = {NamedArg::single("s", 0.5f)};
  CHECK(pack_triton_args("k", parse("s:i32"), real, 1, &args) == AITER_ERR_INTERNAL);  // float for an integer
  CHECK(pack_triton_args("k", parse("s:f32"), real, 1, &args) == AITER_OK);
  CHECK(read_slot<float>(args, 0) == 0.5f);
}

void rejects_malformed_columns() {
  std::vector<TritonParam> params;
  std::string error;
  for (const char *bad : {"", "a", "a:", ":ptr", "a:f64", "a:ptr,,b:i32", "a:ptr,b"}) {
    CHECK(!parse_triton_params(bad, &params, &error));
    if (parse_triton_params(bad, &params, &error)) fprintf(stderr, "  '%s' was accepted\n", bad);
  }
  std::string many;
  for (int i = 0; i <= aiter::gpu::kMaxTritonArgs; ++i) many += (i ? ",p" : "p") + std::to_string(i) + ":i32";
  CHECK(!parse_triton_params(many, &params, &error));
}

// The layout kernels/triton/build.py writes for the GEMM kernels, as a manifest
// row holds it, against the values libaiter/gpu/triton_gemm.cpp offers.
void packs_a_gemm_row() {
  const auto params = parse(
      "a:ptr,w:ptr,out:ptr,bias:ptr,a_scale:ptr,w_scale:ptr,m:i32,n:i32,k:i32,lda:i64,ldw:i64,ldo:i64,a_batch:i64,"
      "w_batch:i64,out_batch:i64,a_scale_batch:i64,w_scale_batch:i64,out_kind:i32,has_bias:i32,bias_f32:i32,"
      "a_scale_step:i32,w_scale_step:i32,kgroups:i32,scratch:ptr,scratch:ptr");
  CHECK(params.size() == 25);
  const char *names[] = {"a", "w", "out", "bias", "a_scale", "w_scale"};
  std::vector<NamedArg> values;
  for (const char *n : names) values.push_back(NamedArg::pointer(n, n));
  const char *numbers[] = {"m", "n", "k", "lda", "ldw", "ldo", "a_batch", "w_batch", "out_batch", "a_scale_batch",
                           "w_scale_batch", "out_kind", "has_bias", "bias_f32", "a_scale_step", "w_scale_step",
                           "kgroups"};
  int64_t v = 100;
  for (const char *n : numbers) values.push_back(NamedArg::number(n, v++));
  TritonArgs args;
  CHECK(pack_triton_args("gemm", params, values.data(), int(values.size()), &args) == AITER_OK);
  CHECK(args.count == 25 && read_slot<const void *>(args, 4) == names[4]);
  CHECK(read_slot<int32_t>(args, 8) == 102 && read_slot<int64_t>(args, 9) == 103 && read_slot<int32_t>(args, 22) == 116);
}

}  // namespace

int main() {
  packs_in_the_kernels_order();
  refuses_mismatches();
  rejects_malformed_columns();
  packs_a_gemm_row();
  return report();
}
