// Turns C++ exceptions into error strings at the FFI boundary: a C++ exception must
// never unwind into Rust. Shared by the shim's translation units.
#pragma once

#include <c10/util/Exception.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>

namespace gpubench {

inline void write_error(char* err, size_t err_len, const char* msg) {
  if (err == nullptr || err_len == 0) return;
  std::strncpy(err, msg, err_len - 1);
  err[err_len - 1] = '\0';
}

// A copy of `text` in memory from malloc, for the Rust side to hand back to the
// shim's free function.
inline char* malloc_copy(const std::string& text) {
  auto* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

// Runs `body`; returns 0, or 1 with the exception's message (without libtorch's C++
// backtrace) in `err`.
template <typename F>
int guarded(char* err, size_t err_len, F&& body) {
  try {
    body();
    return 0;
  } catch (const c10::Error& e) {
    write_error(err, err_len, e.what_without_backtrace());
  } catch (const std::exception& e) {
    write_error(err, err_len, e.what());
  } catch (...) {
    write_error(err, err_len, "unknown C++ exception");
  }
  return 1;
}

}  // namespace gpubench
