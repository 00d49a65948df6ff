// C++ stacks for the caching allocator's history: gathered at each allocation and
// named later, in one batch. Shared by the CUDA shim (the allocator's snapshots) and
// the static shim (a traceback the CPU tests name through the same code).
//
// Naming never throws: libtorch's addr2line mode parses addr2line's output with
// `stoi`, which threw for frames without line information on an H200 (a release
// binary), and lost every frame. The in-process modes go first: `fast` (ELF symbol
// table, and DWARF lines where present), then `dladdr` (exported symbols only); a
// frame neither names is kept as `library+0xoffset`, or its raw address.
#pragma once

#include <c10/core/Allocator.h>
#include <torch/csrc/profiler/unwind/unwind.h>

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpubench {

// The return addresses of one allocating call, innermost first.
struct CppFrames : public c10::GatheredContext {
  std::vector<void*> ips;
};

// The allocator's context function: the C++ stack of the allocating call.
inline std::shared_ptr<c10::GatheredContext> gather_cpp_frames() {
  auto f = std::make_shared<CppFrames>();
  f->ips = torch::unwind::unwind();
  return f;
}

inline const CppFrames* cpp_frames_of(const std::shared_ptr<c10::GatheredContext>& c) {
  return dynamic_cast<const CppFrames*>(c.get());
}

inline std::string basename_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Strips the `::h0123456789abcdef` hash a Rust symbol ends with.
inline std::string without_rust_hash(std::string name) {
  if (name.size() > 19 && name.compare(name.size() - 19, 3, "::h") == 0) {
    bool hex = true;
    for (size_t i = name.size() - 16; i < name.size(); ++i) {
      char c = name[i];
      hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    }
    if (hex) name.resize(name.size() - 19);
  }
  return name;
}

// The C and C++ runtimes' own libraries: a thread's first frames (`clone`,
// `start_thread`, `execute_native_thread_routine`), never the benchmark's code.
inline bool is_system_library(const std::string& lib) {
  static const char* prefixes[] = {"libc.so", "libstdc++.so", "libgcc_s.so", "ld-linux",
                                   "libpthread.so"};
  for (const char* p : prefixes) {
    if (lib.rfind(p, 0) == 0) return true;
  }
  return false;
}

// libtorch's, tch's, the shim's own and the C and C++ runtimes' frames, which say
// nothing about the benchmark's code.
inline bool is_library_frame(const std::string& name, const std::string& library) {
  static const char* prefixes[] = {"c10::", "at::", "torch::", "tch::", "atg_", "at_", "std::__",
                                   "std::thread::"};
  // A template function's name starts with its return type (`void std::__invoke_impl<…>`).
  const size_t word = name.find_first_not_of(
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:");
  const std::string function =
      word != std::string::npos && name[word] == ' ' ? name.substr(word + 1) : name;
  for (const char* p : prefixes) {
    if (name.rfind(p, 0) == 0 || function.rfind(p, 0) == 0) return true;
  }
  // The shim's C entry points, and its helpers (a template's name starts with its
  // return type).
  if (name.rfind("gpubench_", 0) == 0 &&
      (name.find("::") == std::string::npos || name.find("{lambda") != std::string::npos)) {
    return true;
  }
  if (name.find("gpubench::") != std::string::npos) return true;
  const std::string lib = basename_of(library);
  return lib.rfind("libtorch", 0) == 0 || lib.rfind("libc10", 0) == 0 ||
         lib.find("gpubench-cuda-shim") != std::string::npos || is_system_library(lib);
}


// Names every address of `stacks` in one batch: `fast`, else `dladdr`, else none;
// where a mode throws the next is tried.
inline std::unordered_map<void*, torch::unwind::Frame> name_addresses(
    const std::vector<const std::vector<void*>*>& stacks) {
  std::vector<void*> unique;
  std::unordered_map<void*, torch::unwind::Frame> named;
  for (const auto* s : stacks) {
    for (void* ip : *s) {
      if (ip != nullptr && named.emplace(ip, torch::unwind::Frame{}).second) {
        unique.push_back(ip);
      }
    }
  }
  if (unique.empty()) return named;
  for (auto mode : {torch::unwind::Mode::fast, torch::unwind::Mode::dladdr}) {
    try {
      auto frames = torch::unwind::symbolize(unique, mode);
      if (frames.size() != unique.size()) continue;
      for (size_t i = 0; i < unique.size(); ++i) named[unique[i]] = std::move(frames[i]);
      break;
    } catch (const std::exception&) {
      // The next mode, or the addresses as they are.
    }
  }
  return named;
}

// One frame as a line: `function (file:line)`, `function`, `library+0xoffset` or the
// raw address; empty for a frame of libtorch, tch or the shim.
inline std::string frame_line(void* ip, const torch::unwind::Frame& f) {
  std::optional<std::pair<std::string, uint64_t>> lib;
  try {
    lib = torch::unwind::libraryFor(ip);
  } catch (const std::exception&) {
  }
  const std::string library = lib ? lib->first : std::string();
  std::string name = f.funcname == "??" ? std::string() : without_rust_hash(f.funcname);
  if (is_library_frame(name, library)) return std::string();
  std::string line;
  if (!name.empty()) {
    line = name;
    // Without debug information `fast` gives the library and its offset as file and
    // line, and with DWARF 5 it can cut a path's first character: only a source file
    // that is there is worth showing.
    struct stat st;
    if (f.lineno > 0 && f.filename != library && !f.filename.empty() &&
        ::stat(f.filename.c_str(), &st) == 0) {
      line += " (" + f.filename + ":" + std::to_string(f.lineno) + ")";
    }
  } else {
    char buf[48];
    if (lib) {
      std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(lib->second));
      line = basename_of(library) + buf;
    } else {
      std::snprintf(buf, sizeof buf, "%p", ip);
      line = buf;
    }
  }
  for (auto& ch : line) {
    if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
  }
  return line;
}

// The line of a stack none of whose frames is the benchmark's own: an allocation on a
// thread of libtorch's (autograd's backward runs on the engine's threads, whose stack
// holds libtorch and the runtimes only). It names the outermost libtorch function,
// without its parameters (`torch::autograd::Engine::thread_init`), so the block says
// whose thread it was instead of nothing, which reads as "allocated before history".
inline std::string library_thread_line(
    const std::vector<void*>& ips, std::unordered_map<void*, torch::unwind::Frame>& named) {
  std::string outermost;
  for (void* ip : ips) {
    if (ip == nullptr) continue;
    const std::string name = named[ip].funcname;
    // The gathering's own frame, innermost of every stack, says nothing.
    if (name.rfind("torch::unwind::", 0) == 0) continue;
    for (const char* p : {"torch::", "at::", "c10::"}) {
      if (name.rfind(p, 0) == 0) {
        outermost = name.substr(0, name.find('('));
        break;
      }
    }
  }
  return outermost.empty() ? std::string("(only libtorch's and the runtime's frames)")
                           : "(a libtorch thread: " + outermost + ")";
}

// The first `max_frames` lines of each stack that are the benchmark's own (one
// line saying so when none is). An address's line is made once, however many
// stacks hold it (a trace's allocations share most of their frames).
inline std::vector<std::vector<std::string>> frame_lines(
    const std::vector<const std::vector<void*>*>& stacks, int max_frames) {
  auto named = name_addresses(stacks);
  std::unordered_map<void*, std::string> line_of;
  std::vector<std::vector<std::string>> out;
  out.reserve(stacks.size());
  for (const auto* s : stacks) {
    std::vector<std::string> lines;
    bool any = false;
    for (void* ip : *s) {
      if (ip == nullptr) continue;
      any = true;
      if (static_cast<int>(lines.size()) >= max_frames) break;
      auto it = line_of.find(ip);
      if (it == line_of.end()) it = line_of.emplace(ip, frame_line(ip, named[ip])).first;
      if (!it->second.empty()) lines.push_back(it->second);
    }
    if (any && lines.empty() && max_frames > 0) lines.push_back(library_thread_line(*s, named));
    out.push_back(std::move(lines));
  }
  return out;
}

}  // namespace gpubench
