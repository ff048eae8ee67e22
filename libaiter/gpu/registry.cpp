#include "gpu/registry.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "aiter_config.h"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/log.hpp"
#include "gpu/amd_arch.hpp"

namespace aiter {
namespace gpu {
namespace {

struct Entry {
  std::string target, op, variant, file, symbol;
  int block = 0, smem = 0;
  bool triton = false;  // takes its arguments one by one, as `params` says
  std::vector<TritonParam> params;
};

struct Manifest {
  std::string directory;  // "" when no manifest was found
  std::vector<Entry> entries;
  std::vector<std::string> targets;
  std::string problem;  // why loading failed, for messages
};

bool is_file(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// $AITER_KERNEL_PATH (':'-separated), then beside libaiter.so: aiter/<soversion>/
// (system and conda installs), kernels/ (wheel and build tree).
std::vector<std::string> search_path() {
  std::vector<std::string> dirs;
  if (const char *env = std::getenv("AITER_KERNEL_PATH")) {
    std::stringstream ss(env);
    for (std::string dir; std::getline(ss, dir, ':');)
      if (!dir.empty()) dirs.push_back(dir);
  }
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&search_path), &info) && info.dli_fname) {
    std::string lib = info.dli_fname;
    const std::string dir = lib.substr(0, lib.find_last_of('/') == std::string::npos ? 0 : lib.find_last_of('/'));
    dirs.push_back((dir.empty() ? "." : dir) + "/" AITER_SYSTEM_KERNEL_SUBDIR);
    dirs.push_back((dir.empty() ? "." : dir) + "/kernels");
  }
  return dirs;
}

bool parse_line(const std::string &line, Entry *e) {
  std::stringstream ss(line);
  std::string block, smem;
  if (!(std::getline(ss, e->target, '\t') && std::getline(ss, e->op, '\t') && std::getline(ss, e->variant, '\t') &&
        std::getline(ss, e->file, '\t') && std::getline(ss, e->symbol, '\t') && std::getline(ss, block, '\t') &&
        std::getline(ss, smem, '\t')))
    return false;
  e->block = std::atoi(block.c_str());
  e->smem = std::atoi(smem.c_str());
  std::string args, problem;
  if (std::getline(ss, args, '\t') && args != "-") {
    if (!parse_triton_params(args, &e->params, &problem)) return false;
    e->triton = true;
  }
  return e->block > 0;
}

Manifest read_manifest() {
  Manifest m;
  for (const std::string &dir : search_path()) {
    const std::string path = dir + "/manifest.tsv";
    if (!is_file(path)) continue;
    std::ifstream in(path);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (line.empty() || line[0] == '#') continue;
      Entry e;
      if (!parse_line(line, &e)) {
        m.problem = path + ":" + std::to_string(number) + ": malformed manifest line";
        return m;
      }
      if (m.targets.empty() || m.targets.back() != e.target) m.targets.push_back(e.target);
      m.entries.push_back(e);
    }
    m.directory = dir;
    log_message(LogLevel::info, "code objects: %s (%zu kernels)", path.c_str(), m.entries.size());
    return m;
  }
  m.problem = "no manifest.tsv in AITER_KERNEL_PATH or beside libaiter.so";
  return m;
}

const Manifest &manifest() {
  static const Manifest m = read_manifest();
  return m;
}

// The targets whose code objects run on a device: sm_90 takes sm_90a first;
// an NVIDIA cubin runs on later minors of its major (sm_80 on sm_86, sm_89);
// an AMD target drops its feature suffix (gfx942:sramecc+:xnack- -> gfx942),
// then falls back to its family's generic target (gfx1101 -> gfx11-generic).
std::vector<std::string> compatible_targets(const std::string &device_target) {
  std::vector<std::string> out;
  if (device_target.rfind("sm_", 0) == 0) {
    const int cc = std::atoi(device_target.c_str() + 3);
    if (cc == 90) out.push_back("sm_90a");
    for (int minor = cc % 10; minor >= 0; --minor) out.push_back("sm_" + std::to_string(cc / 10 * 10 + minor));
  } else {
    out = amd_code_targets(device_target);
  }
  return out;
}

std::string join(const std::vector<std::string> &items) {
  std::string s;
  for (const std::string &t : items) s += (s.empty() ? "" : ", ") + t;
  return s.empty() ? "none" : s;
}

// Per device: its chosen target, its loaded modules and resolved kernels.
struct DeviceKernels {
  std::mutex mutex;
  bool resolved = false;
  std::string device_target, target;
  std::map<std::string, Module> modules;  // by file
  std::map<std::string, Kernel> kernels;  // by op + '/' + variant
};

DeviceKernels &device_kernels(Driver *driver, int device) {
  static std::mutex mutex;
  static std::map<std::pair<Driver *, int>, std::unique_ptr<DeviceKernels>> all;
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = all[{driver, device}];
  if (!slot) slot.reset(new DeviceKernels());
  return *slot;
}

aiter_status choose_target(Driver *driver, int device, DeviceKernels &dk) {
  aiter_status s = driver->device_target(device, &dk.device_target);
  if (s != AITER_OK) return s;
  dk.target = pick_code_target(compatible_targets(dk.device_target), manifest().targets);
  if (!dk.target.empty()) {
    dk.resolved = true;
    if (dk.target.find("generic") != std::string::npos)
      log_message(LogLevel::info, "%s runs the %s code objects", dk.device_target.c_str(), dk.target.c_str());
    return AITER_OK;
  }
  return fail(AITER_ERR_NO_KERNEL, "no code objects for this GPU (target %s); targets built: %s%s%s",
              dk.device_target.c_str(), join(manifest().targets).c_str(), manifest().problem.empty() ? "" : "; ",
              manifest().problem.c_str());
}

aiter_status read_file(const std::string &path, std::string *bytes) {
  if (read_whole_file(path, bytes)) return AITER_OK;
  return fail(AITER_ERR_NO_KERNEL, "code object %s cannot be read", path.c_str());
}

// Kernels for sm_90 and up start with enter_stream_order (kernels/common/vendor.h),
// so they may be launched before the kernel ahead of them has finished: their
// launch then overlaps its run.  AITER_PROGRAMMATIC_LAUNCH=0 launches them in
// plain stream order.
bool programmatic_launch(const std::string &target) {
  static const bool enabled = [] {
    const char *env = std::getenv("AITER_PROGRAMMATIC_LAUNCH");
    return env == nullptr || std::string(env) != "0";
  }();
  return enabled && target.rfind("sm_", 0) == 0 && std::atoi(target.c_str() + 3) >= 90;
}

aiter_status load_kernel(Driver *driver, DeviceKernels &dk, const Entry &e, Kernel *kernel) {
  auto module = dk.modules.find(e.file);
  if (module == dk.modules.end()) {
    std::string image;
    aiter_status s = read_file(manifest().directory + "/" + e.file, &image);
    Module m = nullptr;
    if (s == AITER_OK) s = driver->load_module(image.data(), &m);
    if (s != AITER_OK) return s;
    module = dk.modules.emplace(e.file, m).first;
  }
  aiter_status s = driver->get_function(module->second, e.symbol.c_str(), &kernel->function);
  // Any dynamic shared memory is told to the driver: its default limit is 48 KiB
  // less the kernel's static shared memory, not 48 KiB.
  if (s == AITER_OK && e.smem > 0) s = driver->set_max_dynamic_smem(kernel->function, e.smem);
  kernel->max_block = e.block;
  kernel->smem = e.smem;
  kernel->smem_allowed = e.smem;
  kernel->programmatic = programmatic_launch(e.target) && !e.triton;  // Triton's kernels do not wait
  kernel->params = e.triton ? &e.params : nullptr;
  return s;
}

}  // namespace

aiter_status find_kernel(Driver *driver, int device, const char *op, const std::string &variant, Kernel *kernel) {
  DeviceKernels &dk = device_kernels(driver, device);
  std::lock_guard<std::mutex> lock(dk.mutex);
  const std::string key = std::string(op) + "/" + variant;
  auto found = dk.kernels.find(key);
  if (found != dk.kernels.end()) {
    *kernel = found->second;
    return AITER_OK;
  }
  if (!dk.resolved) {
    aiter_status s = choose_target(driver, device, dk);
    if (s != AITER_OK) return s;
  }
  for (const Entry &e : manifest().entries) {
    if (e.target != dk.target || e.op != op || e.variant != variant) continue;
    aiter_status s = load_kernel(driver, dk, e, kernel);
    if (s == AITER_OK) dk.kernels.emplace(key, *kernel);
    return s;
  }
  return fail(AITER_ERR_NO_KERNEL, "no kernel %s variant %s for target %s in %s", op, variant.c_str(),
              dk.target.c_str(), manifest().directory.c_str());
}

aiter_status code_target(Driver *driver, int device, std::string *target) {
  DeviceKernels &dk = device_kernels(driver, device);
  std::lock_guard<std::mutex> lock(dk.mutex);
  if (!dk.resolved) {
    aiter_status s = choose_target(driver, device, dk);
    if (s != AITER_OK) return s;
  }
  *target = dk.target;
  return AITER_OK;
}

aiter_status allow_dynamic_smem(Driver *driver, int device, const char *op, const std::string &variant, int bytes,
                                Kernel *kernel) {
  DeviceKernels &dk = device_kernels(driver, device);
  std::lock_guard<std::mutex> lock(dk.mutex);
  auto found = dk.kernels.find(std::string(op) + "/" + variant);
  if (found == dk.kernels.end())
    return fail(AITER_ERR_INTERNAL, "%s/%s: shared memory asked for before the kernel was found", op, variant.c_str());
  Kernel &known = found->second;
  if (bytes > known.smem_allowed) {
    aiter_status s = driver->set_max_dynamic_smem(known.function, bytes);
    if (s != AITER_OK) return s;
    known.smem_allowed = bytes;
  }
  *kernel = known;
  return AITER_OK;
}

bool has_kernel(Driver *driver, int device, const char *op, const std::string &variant) {
  std::string target;
  if (code_target(driver, device, &target) != AITER_OK) return false;
  for (const Entry &e : manifest().entries)
    if (e.target == target && e.op == op && e.variant == variant) return true;
  return false;
}

std::string kernel_directory() { return manifest().directory; }
std::vector<std::string> built_targets() { return manifest().targets; }

}  // namespace gpu
}  // namespace aiter
