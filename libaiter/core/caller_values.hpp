// Values a C caller controls that C++ must not load as enums.  C passes any int
// where the ABI declares an enum (DLDeviceType in a DLDevice, aiter_gelu_approx,
// aiter_rope_style, aiter_status), but a C++ load of an enum object holding no
// enumerator's value is undefined behaviour.  These read such values through
// their bytes, as plain integers, so that they can be range-checked first.
#pragma once

#include <cstdint>
#include <cstring>

#include "aiter/aiter.h"

namespace aiter {

template <class Enum>
int32_t enum_value(const Enum &value) {
  static_assert(sizeof(Enum) == sizeof(int32_t), "C enums of the ABI are int-sized");
  int32_t raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

// The device type as the caller wrote it: any int32.
inline int32_t device_type_code(const DLDevice &device) { return enum_value(device.device_type); }

// The device types libaiter runs: kDLCPU, kDLCUDA, kDLROCM.
inline bool runnable_device_type(int32_t code) { return code == kDLCPU || code == kDLCUDA || code == kDLROCM; }

}  // namespace aiter
