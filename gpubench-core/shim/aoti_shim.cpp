// AOTInductor packages (.pt2) through libtorch's AOTIModelPackageLoader, for the
// eager-versus-compiled comparison. Tensors cross as `at::Tensor*` (what tch's
// C_tensor is); outputs are handed back one at a time through a callback as
// heap-allocated `at::Tensor*` that the Rust side owns. Every C++ exception becomes
// an error string: a package that cannot load (missing file, another device, built
// for another libtorch) is an error, never a crash.
#include "guard.h"

#include <ATen/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <cstddef>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {

using gpubench::guarded;
using gpubench::write_error;

using Loader = torch::inductor::AOTIModelPackageLoader;

}  // namespace

extern "C" {

// Loads the package at `path` for device `device_index` (-1: the package's
// default). Returns null and fills `err` on failure.
void* gpubench_aoti_load(const char* path, int device_index, char* err, size_t err_len) {
  Loader* loader = nullptr;
  guarded(err, err_len, [&] {
    loader = new Loader(std::string(path), "model", false, 1,
                        static_cast<c10::DeviceIndex>(device_index));
  });
  return loader;
}

// Runs the package on `n_inputs` tensors; each output is passed to `on_output`
// as a new `at::Tensor*` the callee owns.
int gpubench_aoti_run(void* handle, void* const* inputs, size_t n_inputs, void* ctx,
                      void (*on_output)(void* ctx, void* tensor), char* err,
                      size_t err_len) {
  return guarded(err, err_len, [&] {
    auto* loader = static_cast<Loader*>(handle);
    std::vector<at::Tensor> args;
    args.reserve(n_inputs);
    for (size_t i = 0; i < n_inputs; ++i) {
      args.push_back(*static_cast<const at::Tensor*>(inputs[i]));
    }
    std::vector<at::Tensor> outputs = loader->run(args);
    for (auto& t : outputs) {
      on_output(ctx, new at::Tensor(std::move(t)));
    }
  });
}

// Calls `on_entry` once per metadata entry (strings with their lengths).
int gpubench_aoti_metadata(void* handle, void* ctx,
                           void (*on_entry)(void* ctx, const char* key, size_t key_len,
                                            const char* value, size_t value_len),
                           char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto* loader = static_cast<Loader*>(handle);
    for (const auto& kv : loader->get_metadata()) {
      on_entry(ctx, kv.first.data(), kv.first.size(), kv.second.data(), kv.second.size());
    }
  });
}

// Calls `on_spec` once per call-spec string (input spec, output spec).
int gpubench_aoti_call_spec(void* handle, void* ctx,
                            void (*on_spec)(void* ctx, const char* spec, size_t len),
                            char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto* loader = static_cast<Loader*>(handle);
    for (const auto& s : loader->get_call_spec()) {
      on_spec(ctx, s.data(), s.size());
    }
  });
}

void gpubench_aoti_free(void* handle) {
  try {
    delete static_cast<Loader*>(handle);
  } catch (...) {
  }
}

}  // extern "C"
