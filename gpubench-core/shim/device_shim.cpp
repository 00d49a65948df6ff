// Device-generic c10 calls that tch does not expose: device events, caching
// allocator statistics, and where libtorch was loaded from. Only c10 and ATen
// interfaces are used, so no CUDA headers are needed; on a machine without CUDA
// every call reports an error instead of throwing across the FFI boundary.
#include "frames.h"
#include "guard.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

namespace {

using gpubench::guarded;
using gpubench::write_error;

const c10::impl::DeviceGuardImplInterface* cuda_impl() {
  return c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
}

}  // namespace

extern "C" {

struct gpubench_memory_stats {
  int64_t allocated_current;
  int64_t allocated_peak;
  int64_t reserved_current;
  int64_t reserved_peak;
  int64_t num_alloc_retries;
  int64_t num_ooms;
};

// Makes `device` the calling thread's current CUDA device. Done once, first: CUDA
// calls that take no device (a profiler starting, a default stream) otherwise act
// on device 0 and open a context there, on a GPU another benchmark may be using.
int gpubench_cuda_set_device(int device, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    cuda_impl()->setDevice(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device)));
  });
}

int gpubench_cuda_synchronize(int device, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    cuda_impl()->synchronizeDevice(static_cast<c10::DeviceIndex>(device));
  });
}

void* gpubench_event_create(char* err, size_t err_len) {
  c10::Event* ev = nullptr;
  guarded(err, err_len, [&] {
    ev = new c10::Event(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  });
  return ev;
}

int gpubench_event_record(void* ev, int device, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto* event = static_cast<c10::Event*>(ev);
    c10::Device dev(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device));
    event->record(cuda_impl()->getStream(dev));
  });
}

int gpubench_event_elapsed_ms(void* start, void* end, double* ms, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto* s = static_cast<c10::Event*>(start);
    auto* e = static_cast<c10::Event*>(end);
    e->synchronize();
    *ms = s->elapsedTime(*e);
  });
}

void gpubench_event_destroy(void* ev) {
  try {
    delete static_cast<c10::Event*>(ev);
  } catch (...) {
  }
}

int gpubench_memory_stats(int device, gpubench_memory_stats* out, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto* alloc = c10::getDeviceAllocator(c10::DeviceType::CUDA);
    auto stats = alloc->getDeviceStats(static_cast<c10::DeviceIndex>(device));
    const auto aggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    out->allocated_current = stats.allocated_bytes[aggregate].current;
    out->allocated_peak = stats.allocated_bytes[aggregate].peak;
    out->reserved_current = stats.reserved_bytes[aggregate].current;
    out->reserved_peak = stats.reserved_bytes[aggregate].peak;
    out->num_alloc_retries = stats.num_alloc_retries;
    out->num_ooms = stats.num_ooms;
  });
}

// Allocations and their bytes since the accumulated statistics were last reset.
int gpubench_allocation_counts(int device, uint64_t* count, uint64_t* bytes, char* err,
                               size_t err_len) {
  return guarded(err, err_len, [&] {
    auto* alloc = c10::getDeviceAllocator(c10::DeviceType::CUDA);
    auto stats = alloc->getDeviceStats(static_cast<c10::DeviceIndex>(device));
    const auto aggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    *count = static_cast<uint64_t>(stats.allocation[aggregate].allocated);
    *bytes = static_cast<uint64_t>(stats.allocated_bytes[aggregate].allocated);
  });
}

int gpubench_memory_reset_accumulated(int device, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    c10::getDeviceAllocator(c10::DeviceType::CUDA)
        ->resetAccumulatedStats(static_cast<c10::DeviceIndex>(device));
  });
}

int gpubench_memory_reset_peak(int device, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto* alloc = c10::getDeviceAllocator(c10::DeviceType::CUDA);
    alloc->resetPeakStats(static_cast<c10::DeviceIndex>(device));
    alloc->resetAccumulatedStats(static_cast<c10::DeviceIndex>(device));
  });
}

int gpubench_memory_empty_cache(char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    c10::getDeviceAllocator(c10::DeviceType::CUDA)->emptyCache();
  });
}

int gpubench_memory_info(int device, uint64_t* free_bytes, uint64_t* total_bytes, char* err,
                         size_t err_len) {
  return guarded(err, err_len, [&] {
    auto info = c10::getDeviceAllocator(c10::DeviceType::CUDA)
                    ->getMemoryInfo(static_cast<c10::DeviceIndex>(device));
    *free_bytes = info.first;
    *total_bytes = info.second;
  });
}

long gpubench_cuda_runtime_version() {
  try {
    return at::detail::getCUDAHooks().versionCUDART();
  } catch (...) {
    return -1;
  }
}

long gpubench_cudnn_version() {
  try {
    return at::detail::getCUDAHooks().versionCuDNN();
  } catch (...) {
    return -1;
  }
}

// The directory holding libc10.so as the loader resolved it, so libtorch_cuda.so can
// be opened from the same installation. Returns 0 and fills `out` on success.
int gpubench_libtorch_lib_dir(char* out, size_t out_len) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&c10::GetCPUAllocator), &info) == 0 ||
      info.dli_fname == nullptr) {
    return 1;
  }
  std::string path(info.dli_fname);
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return 1;
  write_error(out, out_len, path.substr(0, slash).c_str());
  return 0;
}

// The C++ stack of this call, gathered and named as the allocator's history gathers
// and names the stack of an allocation (frames.h): one line per frame of the
// caller's own, at most `max_frames`, innermost first. Null on failure; free with
// gpubench_text_free.
char* gpubench_traceback_frames(int max_frames, char* err, size_t err_len) {
  char* out = nullptr;
  guarded(err, err_len, [&] {
    auto context = gpubench::gather_cpp_frames();
    const auto* frames = gpubench::cpp_frames_of(context);
    std::string text;
    const auto lines = gpubench::frame_lines({&frames->ips}, max_frames);
    for (const auto& line : lines[0]) {
      text += line + '\n';
    }
    out = gpubench::malloc_copy(text);
  });
  return out;
}

// gpubench_traceback_frames on a thread of the shim's own, whose stack holds no
// frame of the caller's: what an allocation on libtorch's autograd thread gathers.
char* gpubench_traceback_frames_on_thread(int max_frames, char* err, size_t err_len) {
  char* out = nullptr;
  std::string error(err_len, '\0');
  std::thread([&] { out = gpubench_traceback_frames(max_frames, error.data(), err_len); }).join();
  if (out == nullptr) write_error(err, err_len, error.c_str());
  return out;
}

void gpubench_text_free(char* p) { std::free(p); }

}  // extern "C"

#include <torch/headeronly/version.h>

extern "C" const char* gpubench_torch_version() {
  static const std::string v = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." + std::to_string(TORCH_VERSION_PATCH);
  return v.c_str();
}
