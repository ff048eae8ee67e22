// The torch shim functions that libaiter_torch.so calls, defined here as
// forwarders to the libtorch_cpu.so already loaded in the process (found by
// its soname with RTLD_NOLOAD, each function by dlsym on first use).
//
// Why not link libtorch: a DT_NEEDED on it would make auditwheel look for it
// (and copy it into the wheel), and one library could not serve every torch.
// Why not leave the symbols undefined: `import torch` loads libtorch_cpu.so
// RTLD_LOCAL, so the loader would not find them; making it RTLD_GLOBAL would
// let its 74,000 exports (MKL, Sleef, fbgemm, ...) interpose on every library
// loaded after it.  The link fails when the torch headers start calling a
// shim function missing here (no -z undefs), and libaiter_torch.map keeps
// these definitions out of the dynamic symbol table.
//
// A function absent from the loaded torch (older than TORCH_TARGET_VERSION;
// aiter/torch/_native.py does not load the library there) returns the shim's
// failure code, which the stable API raises as an error, never a crash.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/c/shim.h>

#include <dlfcn.h>

namespace {

void *loaded_torch() {
  static void *const handle = dlopen("libtorch_cpu.so", RTLD_NOLOAD | RTLD_LAZY);
  return handle;
}

template <typename Function>
Function resolve(const char *name) {
  void *torch = loaded_torch();
  return torch == nullptr ? nullptr : reinterpret_cast<Function>(dlsym(torch, name));
}

}  // namespace

// One forwarder: `fallback` is returned where torch lacks the function.
#define AITER_TORCH_FORWARD(ret, name, fallback, params, args)                 \
  extern "C" ret name params {                                                 \
    static const auto target = resolve<ret(*) params>(#name);                 \
    return target == nullptr ? (fallback) : target args;                       \
  }

#define AITER_TORCH_CONSTANT(name) AITER_TORCH_FORWARD(int32_t, name, -1, (), ())

AITER_TORCH_CONSTANT(aoti_torch_device_type_cpu)
AITER_TORCH_CONSTANT(aoti_torch_device_type_cuda)
AITER_TORCH_CONSTANT(aoti_torch_dtype_bfloat16)
AITER_TORCH_CONSTANT(aoti_torch_dtype_bool)
AITER_TORCH_CONSTANT(aoti_torch_dtype_complex128)
AITER_TORCH_CONSTANT(aoti_torch_dtype_complex32)
AITER_TORCH_CONSTANT(aoti_torch_dtype_complex64)
AITER_TORCH_CONSTANT(aoti_torch_dtype_float16)
AITER_TORCH_CONSTANT(aoti_torch_dtype_float32)
AITER_TORCH_CONSTANT(aoti_torch_dtype_float64)
AITER_TORCH_CONSTANT(aoti_torch_dtype_float8_e4m3fn)
AITER_TORCH_CONSTANT(aoti_torch_dtype_float8_e4m3fnuz)
AITER_TORCH_CONSTANT(aoti_torch_dtype_float8_e5m2)
AITER_TORCH_CONSTANT(aoti_torch_dtype_float8_e5m2fnuz)
AITER_TORCH_CONSTANT(aoti_torch_dtype_int16)
AITER_TORCH_CONSTANT(aoti_torch_dtype_int32)
AITER_TORCH_CONSTANT(aoti_torch_dtype_int64)
AITER_TORCH_CONSTANT(aoti_torch_dtype_int8)
AITER_TORCH_CONSTANT(aoti_torch_dtype_uint16)
AITER_TORCH_CONSTANT(aoti_torch_dtype_uint32)
AITER_TORCH_CONSTANT(aoti_torch_dtype_uint64)
AITER_TORCH_CONSTANT(aoti_torch_dtype_uint8)

AITER_TORCH_FORWARD(uint64_t, aoti_torch_abi_version, 0, (), ())
AITER_TORCH_FORWARD(bool, aoti_torch_grad_mode_is_enabled, true, (), ())

#define AITER_TORCH_FAILS AOTI_TORCH_FAILURE
AITER_TORCH_FORWARD(AOTITorchError, aoti_torch_delete_tensor_object, AITER_TORCH_FAILS,
                    (AtenTensorHandle tensor), (tensor))
AITER_TORCH_FORWARD(AOTITorchError, aoti_torch_new_tensor_handle, AITER_TORCH_FAILS,
                    (AtenTensorHandle orig, AtenTensorHandle *made), (orig, made))
AITER_TORCH_FORWARD(AOTITorchError, aoti_torch_empty_strided, AITER_TORCH_FAILS,
                    (int64_t ndim, const int64_t *sizes, const int64_t *strides, int32_t dtype,
                     int32_t device_type, int32_t device_index, AtenTensorHandle *made),
                    (ndim, sizes, strides, dtype, device_type, device_index, made))
AITER_TORCH_FORWARD(AOTITorchError, aoti_torch_get_data_ptr, AITER_TORCH_FAILS,
                    (AtenTensorHandle tensor, void **data), (tensor, data))
AITER_TORCH_FORWARD(AOTITorchError, aoti_torch_get_device_index, AITER_TORCH_FAILS,
                    (AtenTensorHandle tensor, int32_t *index), (tensor, index))
AITER_TORCH_FORWARD(AOTITorchError, aoti_torch_get_device_type, AITER_TORCH_FAILS,
                    (AtenTensorHandle tensor, int32_t *type), (tensor, type))
AITER_TORCH_FORWARD(AOTITorchError, aoti_torch_get_dim, AITER_TORCH_FAILS,
                    (AtenTensorHandle tensor, int64_t *dim), (tensor, dim))
AITER_TORCH_FORWARD(AOTITorchError, aoti_torch_get_dtype, AITER_TORCH_FAILS,
                    (AtenTensorHandle tensor, int32_t *dtype), (tensor, dtype))
AITER_TORCH_FORWARD(AOTITorchError, aoti_torch_get_sizes, AITER_TORCH_FAILS,
                    (AtenTensorHandle tensor, int64_t **sizes), (tensor, sizes))
AITER_TORCH_FORWARD(AOTITorchError, aoti_torch_get_strides, AITER_TORCH_FAILS,
                    (AtenTensorHandle tensor, int64_t **strides), (tensor, strides))
AITER_TORCH_FORWARD(AOTITorchError, aoti_torch_library_init_impl, AITER_TORCH_FAILS,
                    (const char *ns, const char *key, const char *file, uint32_t line, TorchLibraryHandle *made),
                    (ns, key, file, line, made))
AITER_TORCH_FORWARD(AOTITorchError, torch_library_impl, AITER_TORCH_FAILS,
                    (TorchLibraryHandle self, const char *name, void (*fn)(StableIValue *, uint64_t, uint64_t),
                     uint64_t version),
                    (self, name, fn, version))
AITER_TORCH_FORWARD(AOTITorchError, torch_call_dispatcher, AITER_TORCH_FAILS,
                    (const char *op, const char *overload, StableIValue *stack, uint64_t version),
                    (op, overload, stack, version))
AITER_TORCH_FORWARD(AOTITorchError, torch_delete_string, AITER_TORCH_FAILS, (StringHandle handle), (handle))
AITER_TORCH_FORWARD(AOTITorchError, torch_string_c_str, AITER_TORCH_FAILS,
                    (StringHandle handle, const char **data), (handle, data))
AITER_TORCH_FORWARD(AOTITorchError, torch_string_length, AITER_TORCH_FAILS,
                    (StringHandle handle, size_t *length), (handle, length))
