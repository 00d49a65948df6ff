// Turns C++ exceptions into error strings at the FFI boundary: a C++ exception must
// never unwind into Rust. Shared by the shim's translation units.
#pragma once

#include <c10/util/Exception.h>

#include <cstddef>
#include <cstring>
#include <exception>

namespace gpubench {

inline void write_error(char* err, size_t err_len, const char* msg) {
  if (err == nullptr || err_len == 0) return;
  std::strncpy(err, msg, err_len - 1);
  err[err_len - 1] = '\0';
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
