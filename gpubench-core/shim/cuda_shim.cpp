// What the GPU did, from libtorch's CUDA side: CUDA-graph capture and replay of a
// routine (its kernel time without host gaps), and Kineto/CUPTI activity records of
// the kernels, copies and synchronisations of a stretch of calls.
//
// Built as a shared library of its own (it needs the CUDA headers and libtorch_cuda)
// and opened at run time after libtorch_cuda.so, so a bench executable still starts
// on machines without CUDA. Every C++ exception becomes an error string.
#include "guard.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>

namespace {

using gpubench::guarded;
using gpubench::write_error;

// A routine's capture: the side stream it runs on while captured (capture on the
// default stream is refused), the guard that makes it current, and the graph.
struct Capture {
  c10::DeviceIndex device;
  c10::cuda::CUDAStream stream;
  std::optional<c10::cuda::CUDAStreamGuard> guard;
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  bool captured = false;

  Capture(c10::DeviceIndex d, c10::cuda::CUDAStream s) : device(d), stream(s) {}
};

}  // namespace

extern "C" {

// The ABI version of this library; the Rust side refuses another.
int gpubench_cuda_shim_version() { return 1; }

// Makes a side stream of `device` current (for the warm-up and the capture that
// follow). Returns null and fills `err` on failure.
void* gpubench_capture_enter(int device, char* err, size_t err_len) {
  Capture* c = nullptr;
  guarded(err, err_len, [&] {
    auto d = static_cast<c10::DeviceIndex>(device);
    auto stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, d);
    // Work queued on the default stream finishes before the side stream starts.
    c10::cuda::getCurrentCUDAStream(d).synchronize();
    c = new Capture(d, stream);
    c->guard.emplace(stream);
  });
  return c;
}

// Starts capturing whatever is launched on the side stream into a graph.
int gpubench_capture_begin(void* state, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto* c = static_cast<Capture*>(state);
    c->stream.synchronize();
    c->graph = std::make_unique<at::cuda::CUDAGraph>();
    c->graph->capture_begin();
  });
}

// Ends the capture and makes the previous stream current again. Fails (with the
// reason) when the routine did something a graph cannot hold; the capture is ended
// either way.
int gpubench_capture_end(void* state, char* err, size_t err_len) {
  auto* c = static_cast<Capture*>(state);
  int rc = guarded(err, err_len, [&] {
    c->graph->capture_end();
    c->captured = true;
  });
  if (rc != 0) {
    try {
      c->graph->reset();
    } catch (...) {
    }
    c->graph.reset();
  }
  try {
    c->stream.synchronize();
  } catch (...) {
  }
  c->guard.reset();
  return rc;
}

// Replays the captured graph `times` times on the current stream.
int gpubench_capture_replay(void* state, int times, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto* c = static_cast<Capture*>(state);
    if (!c->captured || !c->graph) {
      throw std::runtime_error("nothing was captured");
    }
    for (int i = 0; i < times; ++i) {
      c->graph->replay();
    }
  });
}

// Frees the capture (and the graph's memory pool).
void gpubench_capture_free(void* state) {
  auto* c = static_cast<Capture*>(state);
  try {
    if (c->graph) {
      c->graph->reset();
    }
  } catch (...) {
  }
  try {
    delete c;
  } catch (...) {
  }
}

// Starts recording CUDA activities (kernels, copies, memsets, runtime calls) with
// libtorch's Kineto profiler.
int gpubench_profile_start(char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    using namespace torch::autograd::profiler;
    using torch::profiler::impl::ActivityType;
    using torch::profiler::impl::ProfilerConfig;
    using torch::profiler::impl::ProfilerState;
    ProfilerConfig config(ProfilerState::KINETO);
    std::set<ActivityType> activities{ActivityType::CUDA};
    prepareProfiler(config, activities);
    enableProfiler(config, activities);
  });
}

// Stops recording and returns the activities, one per line:
// `<kineto activity type>\t<device type>\t<duration ns>\t<name>`, in a buffer to free
// with gpubench_cuda_shim_free. Null on failure.
char* gpubench_profile_stop(char* err, size_t err_len) {
  char* out = nullptr;
  guarded(err, err_len, [&] {
    auto result = torch::autograd::profiler::disableProfiler();
    std::ostringstream text;
    for (const auto& e : result->events()) {
      std::string name = e.name();
      for (auto& ch : name) {
        if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
      }
      text << static_cast<int>(e.activityType()) << '\t'
           << static_cast<int>(e.deviceType()) << '\t' << e.durationNs() << '\t' << name
           << '\n';
    }
    const std::string s = text.str();
    out = static_cast<char*>(std::malloc(s.size() + 1));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, s.c_str(), s.size() + 1);
  });
  return out;
}

void gpubench_cuda_shim_free(char* p) { std::free(p); }

}  // extern "C"
