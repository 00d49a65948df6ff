// What the GPU did, from libtorch's CUDA side: CUDA-graph capture and replay of a
// routine (its kernel time without host gaps), and Kineto/CUPTI activity records of
// the kernels, copies and synchronisations of a stretch of calls; and the caching
// allocator's snapshot (live blocks, segments, where blocks were allocated), its
// history recording and its memory cap.
//
// Built as a shared library of its own (it needs the CUDA headers and libtorch_cuda)
// and opened at run time after libtorch_cuda.so, so a bench executable still starts
// on machines without CUDA. Every C++ exception becomes an error string.
#include "frames.h"
#include "guard.h"

#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <vector>

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

// A CUDA graph that can also undo a capture that did not end. When
// cudaStreamEndCapture fails (the routine synchronised, read a value back, ...),
// CUDAGraph::capture_end throws before its own clean-up: the CUDA generators stay in
// capture mode (the next random op outside a capture then fails with "Offset
// increment outside graph capture encountered unexpectedly"), the caching allocator
// keeps routing the stream's allocations through the capture's private pool, and
// the runtime's last error stays set. In one process of `cargo gpubench ab` the
// other revision shares all three, so they are put back here, from the graph's own
// (protected) state.
struct Graph : at::cuda::CUDAGraph {
  void abandon(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
        status != cudaStreamCaptureStatusNone) {
      cudaGraph_t left = nullptr;
      if (cudaStreamEndCapture(stream, &left) == cudaSuccess && left != nullptr) {
        cudaGraphDestroy(left);
      }
    }
    if (!capture_ended_ && capture_dev_ != UNDEFINED_DEVICE) {
      try {
        c10::cuda::CUDACachingAllocator::endAllocateToPool(capture_dev_, mempool_id_);
      } catch (...) {
        // capture_end got as far as closing the pool.
      }
      try {
        c10::cuda::CUDACachingAllocator::releasePool(capture_dev_, mempool_id_);
      } catch (...) {
      }
    }
    for (auto& entry : captured_generator_states_) {
      entry.first->capturing_ = false;
    }
    (void)cudaGetLastError();
  }
};

// A routine's capture: the side stream it runs on while captured (capture on the
// default stream is refused), the guard that makes it current, and the graph.
struct Capture {
  c10::DeviceIndex device;
  c10::cuda::CUDAStream stream;
  std::optional<c10::cuda::CUDAStreamGuard> guard;
  std::unique_ptr<Graph> graph;
  bool captured = false;

  Capture(c10::DeviceIndex d, c10::cuda::CUDAStream s) : device(d), stream(s) {}
};

// Records, for every block allocated from now on, the C++ stack that allocated it
// (live blocks only: one trace entry kept), dropping what was recorded before when
// `clear_history`.
void record_allocation_stacks(bool clear_history) {
  c10::cuda::CUDACachingAllocator::recordHistory(
      true, gpubench::gather_cpp_frames, /*alloc_trace_max_entries=*/1,
      c10::cuda::CUDACachingAllocator::RecordContext::STATE, clear_history, {});
}

}  // namespace

extern "C" {

// The ABI version of this library; the Rust side refuses another.
int gpubench_cuda_shim_version() { return 4; }

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
    c->graph = std::make_unique<Graph>();
    c->graph->capture_begin();
  });
}

// Ends the capture and makes the previous stream current again. Fails (with the
// reason) when the routine did something a graph cannot hold; the capture is ended
// either way, and gpubench_capture_abandon then undoes what the failure left.
int gpubench_capture_end(void* state, char* err, size_t err_len) {
  auto* c = static_cast<Capture*>(state);
  int rc = guarded(err, err_len, [&] {
    c->graph->capture_end();
    c->captured = true;
  });
  try {
    c->stream.synchronize();
  } catch (...) {
  }
  c->guard.reset();
  return rc;
}

// Undoes what a capture that did not end left behind (Graph::abandon) and drops its
// graph; the process is then as it was before gpubench_capture_begin.
void gpubench_capture_abandon(void* state) {
  auto* c = static_cast<Capture*>(state);
  c->captured = false;
  if (c->graph) {
    try {
      c->graph->abandon(c->stream.stream());
    } catch (...) {
    }
    try {
      c->graph->reset();
    } catch (...) {
    }
    c->graph.reset();
  }
  c->guard.reset();
  (void)cudaGetLastError();
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
    out = gpubench::malloc_copy(text.str());
  });
  return out;
}

void gpubench_cuda_shim_free(char* p) { std::free(p); }

// Records, for every block allocated from now on, the C++ stack that allocated it
// (PyTorch's `torch.cuda.memory._record_memory_history(stacks="cpp")`).
int gpubench_memory_record_history(char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    record_allocation_stacks(/*clear_history=*/false);
  });
}

// Caps the caching allocator of `device` at `fraction` of its memory.
int gpubench_memory_set_fraction(int device, double fraction, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    c10::cuda::CUDACachingAllocator::setMemoryFraction(
        fraction, static_cast<c10::DeviceIndex>(device));
  });
}

// The caching allocator's segments of `device` and their blocks, one per line:
// `S\t<bytes>\t<stream>` opens a segment, `B\t<bytes>\t<requested>\t<live>` adds a
// block, `F\t<frame>` a frame of where the block before was allocated (for the
// `max_frames_blocks` largest live blocks, when history is recorded). Null on
// failure; free with gpubench_cuda_shim_free.
char* gpubench_memory_snapshot(int device, int max_frames_blocks, int max_frames, char* err,
                               size_t err_len) {
  char* out = nullptr;
  guarded(err, err_len, [&] {
    auto snap = c10::cuda::CUDACachingAllocator::snapshot({0, 0}, /*include_traces=*/false);
    // The largest live blocks with a recorded stack get their frames.
    std::vector<std::pair<size_t, const c10::CachingDeviceAllocator::BlockInfo*>> live;
    for (const auto& seg : snap.segments) {
      if (seg.device != device) continue;
      for (const auto& b : seg.blocks) {
        if (b.allocated && b.context_when_allocated) live.emplace_back(b.size, &b);
      }
    }
    std::sort(live.begin(), live.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    if (live.size() > static_cast<size_t>(std::max(max_frames_blocks, 0))) {
      live.resize(std::max(max_frames_blocks, 0));
    }
    std::vector<const std::vector<void*>*> stacks;
    std::vector<const c10::CachingDeviceAllocator::BlockInfo*> traced;
    for (const auto& [size, b] : live) {
      if (const auto* f = gpubench::cpp_frames_of(b->context_when_allocated)) {
        stacks.push_back(&f->ips);
        traced.push_back(b);
      }
    }
    const auto lines = gpubench::frame_lines(stacks, max_frames);
    std::ostringstream text;
    for (const auto& seg : snap.segments) {
      if (seg.device != device) continue;
      text << "S\t" << seg.total_size << '\t' << seg.stream << '\n';
      for (const auto& b : seg.blocks) {
        text << "B\t" << b.size << '\t' << (b.allocated ? b.requested_size : 0) << '\t'
             << (b.allocated ? 1 : 0) << '\n';
        auto it = std::find(traced.begin(), traced.end(), &b);
        if (it == traced.end()) continue;
        for (const auto& line : lines[it - traced.begin()]) text << "F\t" << line << '\n';
      }
    }
    out = gpubench::malloc_copy(text.str());
  });
  return out;
}

// The trace `gpubench_memory_trace_stop` reads holds at most this many events (the
// allocator keeps the latest once full).
static constexpr size_t TRACE_MAX_EVENTS = 1000000;

// Starts tracing every allocation and free of the caching allocator, with the C++
// stack of each allocation, from an empty trace.
int gpubench_memory_trace_start(char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    c10::cuda::CUDACachingAllocator::recordHistory(
        true, gpubench::gather_cpp_frames, TRACE_MAX_EVENTS,
        c10::cuda::CUDACachingAllocator::RecordContext::ALLOC, /*clearHistory=*/true, {});
  });
}

// The state of `device` now with its trace since gpubench_memory_trace_start, one
// line each (see gpubench_analysis::memory_trace::parse_shim_trace):
// `S\t<address>\t<bytes>\t<stream>` a segment, `B\t<address>\t<bytes>\t<requested>` a
// live block, `E\t<action>\t<address>\t<bytes>\t<stream>` an event, `F\t<frame>` a
// frame of the block or allocation before, `T\t<complete>`. Then stops the trace,
// keeping the history of live blocks when `keep_history`. Null on failure; free with
// gpubench_cuda_shim_free.
char* gpubench_memory_trace_stop(int device, int max_frames, int keep_history, char* err,
                                 size_t err_len) {
  char* out = nullptr;
  guarded(err, err_len, [&] {
    auto snap = c10::cuda::CUDACachingAllocator::snapshot({0, 0}, /*include_traces=*/true);
    using TraceEntry = c10::CachingDeviceAllocator::TraceEntry;
    static const std::vector<TraceEntry> none;
    const auto& events =
        static_cast<size_t>(device) < snap.device_traces.size() ? snap.device_traces[device] : none;
    // Every stack in one batch: the live blocks', then the allocations'.
    std::vector<const std::vector<void*>*> stacks;
    for (const auto& seg : snap.segments) {
      if (seg.device != device) continue;
      for (const auto& b : seg.blocks) {
        const auto* f = b.allocated ? gpubench::cpp_frames_of(b.context_when_allocated) : nullptr;
        if (f) stacks.push_back(&f->ips);
      }
    }
    for (const auto& e : events) {
      const auto* f = e.action_ == TraceEntry::ALLOC ? gpubench::cpp_frames_of(e.context_) : nullptr;
      if (f) stacks.push_back(&f->ips);
    }
    const auto lines = gpubench::frame_lines(stacks, max_frames);
    size_t next = 0;
    std::ostringstream text;
    for (const auto& seg : snap.segments) {
      if (seg.device != device) continue;
      text << "S\t" << seg.address << '\t' << seg.total_size << '\t' << seg.stream << '\n';
      size_t address = seg.address;
      for (const auto& b : seg.blocks) {
        if (b.allocated) {
          text << "B\t" << address << '\t' << b.size << '\t' << b.requested_size << '\n';
          if (gpubench::cpp_frames_of(b.context_when_allocated)) {
            for (const auto& line : lines[next]) text << "F\t" << line << '\n';
            ++next;
          }
        }
        address += b.size;
      }
    }
    for (const auto& e : events) {
      const char* action = nullptr;
      switch (e.action_) {
        case TraceEntry::ALLOC: action = "alloc"; break;
        case TraceEntry::FREE_COMPLETED: action = "free"; break;
        case TraceEntry::SEGMENT_ALLOC:
        case TraceEntry::SEGMENT_MAP: action = "segment_alloc"; break;
        case TraceEntry::SEGMENT_FREE:
        case TraceEntry::SEGMENT_UNMAP: action = "segment_free"; break;
        default: break;
      }
      if (action == nullptr) continue;
      text << "E\t" << action << '\t' << e.addr_ << '\t' << e.size_ << '\t' << e.stream_
           << '\n';
      if (e.action_ == TraceEntry::ALLOC && gpubench::cpp_frames_of(e.context_)) {
        for (const auto& line : lines[next]) text << "F\t" << line << '\n';
        ++next;
      }
    }
    text << "T\t" << (events.size() < TRACE_MAX_EVENTS ? 1 : 0) << '\n';
    if (keep_history) {
      record_allocation_stacks(/*clear_history=*/true);
    } else {
      c10::cuda::CUDACachingAllocator::recordHistory(
          false, nullptr, 0, c10::cuda::CUDACachingAllocator::RecordContext::NEVER,
          /*clearHistory=*/true, {});
    }
    out = gpubench::malloc_copy(text.str());
  });
  return out;
}

}  // extern "C"
