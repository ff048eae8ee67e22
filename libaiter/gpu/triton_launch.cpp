#include "gpu/triton_launch.hpp"

namespace aiter {
namespace gpu {

bool triton_kernel_built(const GpuCall &call, const char *op, const std::string &variant) {
  Driver *driver = nullptr;
  if (driver_for(call.device.device_type, &driver) != AITER_OK) {
    clear_error();
    return false;
  }
  return has_kernel(driver, call.device.device_id, op, variant);
}

aiter_status launch_triton(const GpuCall &call, const char *op, const std::string &variant, Dim3 grid,
                           const NamedArg *values, int value_count) {
  DeviceScope scope(call.device);
  if (scope.status() != AITER_OK) return scope.status();
  Kernel kernel;
  aiter_status st = find_kernel(scope.driver(), call.device.device_id, op, variant, &kernel);
  if (st != AITER_OK) return st;
  if (kernel.params == nullptr)
    return fail(AITER_ERR_INTERNAL, "%s/%s: the manifest gives no Triton argument list", op, variant.c_str());
  TritonArgs args;
  const std::string name = std::string(op) + "/" + variant;
  st = pack_triton_args(name.c_str(), *kernel.params, values, value_count, &args);
  if (st != AITER_OK) return st;
  return scope.driver()->launch(kernel.function, grid, Dim3{unsigned(kernel.max_block), 1, 1}, unsigned(kernel.smem),
                                call.stream, args.slots, false);
}

}  // namespace gpu
}  // namespace aiter
