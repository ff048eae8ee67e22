#include "gpu/triton_args.hpp"

#include <cstring>
#include <sstream>

#include "core/error.hpp"

namespace aiter {
namespace gpu {

bool parse_triton_params(const std::string &column, std::vector<TritonParam> *params, std::string *error) {
  params->clear();
  std::stringstream ss(column);
  for (std::string item; std::getline(ss, item, ',');) {
    const size_t colon = item.find(':');
    const std::string name = item.substr(0, colon), type = colon == std::string::npos ? "" : item.substr(colon + 1);
    TritonParam p{name, ArgType::ptr};
    if (type == "i32")
      p.type = ArgType::i32;
    else if (type == "i64")
      p.type = ArgType::i64;
    else if (type == "f32")
      p.type = ArgType::f32;
    else if (type != "ptr" || name.empty()) {
      *error = "argument '" + item + "' is not name:ptr, name:i32, name:i64 or name:f32";
      return false;
    }
    params->push_back(p);
  }
  if (params->empty() || params->size() > size_t(kMaxTritonArgs)) {
    *error = "a Triton kernel takes 1 to " + std::to_string(kMaxTritonArgs) + " arguments";
    return false;
  }
  return true;
}

namespace {

// Integers of either width are one kind: the launcher offers int64 values.
int kind_of(ArgType t) { return t == ArgType::ptr ? 0 : t == ArgType::f32 ? 2 : 1; }
const char *kind_name(ArgType t) {
  static const char *const names[] = {"a pointer", "an integer", "a float"};
  return names[kind_of(t)];
}

const NamedArg *find_value(const std::string &name, const NamedArg *values, int count) {
  for (int i = 0; i < count; ++i)
    if (name == values[i].name) return &values[i];
  return nullptr;
}

}  // namespace

aiter_status pack_triton_args(const char *kernel, const std::vector<TritonParam> &params, const NamedArg *values,
                              int value_count, TritonArgs *out) {
  if (params.size() > size_t(kMaxTritonArgs))
    return fail(AITER_ERR_INTERNAL, "%s: %zu arguments, more than %d", kernel, params.size(), kMaxTritonArgs);
  out->count = 0;
  for (const TritonParam &p : params) {
    unsigned char *slot = out->storage[out->count];
    std::memset(slot, 0, 8);
    const NamedArg *v = find_value(p.name, values, value_count);
    if (v == nullptr && p.name != "scratch")
      return fail(AITER_ERR_INTERNAL, "%s: no value for its argument '%s'", kernel, p.name.c_str());
    if (v != nullptr && kind_of(v->type) != kind_of(p.type))
      return fail(AITER_ERR_INTERNAL, "%s: argument '%s' is %s, offered %s", kernel, p.name.c_str(),
                  kind_name(p.type), kind_name(v->type));
    if (p.type == ArgType::ptr) {
      const void *ptr = v ? v->ptr : nullptr;
      std::memcpy(slot, &ptr, sizeof ptr);
    } else if (p.type == ArgType::f32) {
      std::memcpy(slot, &v->real, sizeof(float));
    } else if (p.type == ArgType::i64) {
      std::memcpy(slot, &v->integer, sizeof(int64_t));
    } else {
      if (v->integer < INT32_MIN || v->integer > INT32_MAX)
        return fail(AITER_ERR_INTERNAL, "%s: argument '%s' = %lld does not fit its 32 bits", kernel, p.name.c_str(),
                    static_cast<long long>(v->integer));
      const int32_t narrow = int32_t(v->integer);
      std::memcpy(slot, &narrow, sizeof narrow);
    }
    out->slots[out->count++] = slot;
  }
  return AITER_OK;
}

}  // namespace gpu
}  // namespace aiter
