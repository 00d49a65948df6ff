//! Compiles the C++ shims against the same libtorch that tch links:
//!
//! * `gpubench_shim` (static, linked in): c10's device events and allocator
//!   statistics, and AOTInductor's package loader; it needs no CUDA headers.
//! * `libgpubench_cuda_shim.so` (shared, embedded in the executable and opened at run
//!   time after `libtorch_cuda.so`): CUDA-graph capture and replay and the Kineto
//!   profiler. It needs the CUDA runtime headers and `libtorch_cuda.so`; where either
//!   is missing it is not built and kernel timing says why at run time.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    // torch-sys (`links = "tch"`) exports the libtorch it linked as DEP_TCH_LIBTORCH_LIB.
    let lib = env::var("DEP_TCH_LIBTORCH_LIB")
        .map(PathBuf::from)
        .expect("torch-sys did not report its libtorch directory (DEP_TCH_LIBTORCH_LIB)");
    let root = lib
        .parent()
        .expect("libtorch lib directory has a parent")
        .to_path_buf();
    let include = root.join("include");
    println!("cargo:rerun-if-changed=shim");
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    println!(
        "cargo:rustc-env=GPUBENCH_BUILD_LIBTORCH_LIB={}",
        lib.display()
    );
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .warnings(false)
        .std("c++17")
        .include(&include)
        .include(include.join("torch/csrc/api/include"))
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        .file("shim/device_shim.cpp")
        .file("shim/aoti_shim.cpp")
        .compile("gpubench_shim");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=c10");
    println!("cargo:rustc-link-lib=torch_cpu");

    println!("cargo::rustc-check-cfg=cfg(gpubench_cuda_shim)");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let so = out.join("libgpubench_cuda_shim.so");
    match build_cuda_shim(&root, &lib, &so) {
        Ok(()) => {
            println!("cargo:rustc-cfg=gpubench_cuda_shim");
            println!("cargo:rustc-env=GPUBENCH_CUDA_SHIM={}", so.display());
        }
        Err(why) => {
            println!("cargo:warning=kernel timing is not built in: {why}");
            println!("cargo:rustc-env=GPUBENCH_CUDA_SHIM_MISSING={why}");
        }
    }
}

/// The CUDA runtime headers: `CUDA_HOME/include`, the pip wheel's
/// `nvidia/cu*/include` next to torch, or `/usr/local/cuda/include`; each must hold
/// `crt/host_config.h`, which the wheel's `nvidia-cuda-runtime` lacks (it is in
/// `nvidia-cuda-crt`).
fn cuda_include(root: &Path) -> Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Some(home) = env::var_os("CUDA_HOME") {
        candidates.push(PathBuf::from(home).join("include"));
    }
    if let Some(site) = root.parent() {
        if let Ok(entries) = std::fs::read_dir(site.join("nvidia")) {
            let mut dirs: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path().join("include")))
                .collect();
            dirs.sort();
            candidates.extend(dirs.into_iter().rev());
        }
    }
    candidates.push(PathBuf::from("/usr/local/cuda/include"));
    for c in &candidates {
        if c.join("cuda_runtime_api.h").is_file() {
            if c.join("crt/host_config.h").is_file() {
                return Ok(c.clone());
            }
            return Err(format!(
                "{} has the CUDA runtime headers but not crt/host_config.h (install the \
                 `nvidia-cuda-crt` wheel matching the CUDA version, as scripts/env.sh does)",
                c.display()
            ));
        }
    }
    Err("no CUDA runtime headers found (set CUDA_HOME, or install the torch CUDA wheel)".into())
}

fn build_cuda_shim(root: &Path, lib: &Path, so: &Path) -> Result<(), String> {
    if !lib.join("libtorch_cuda.so").is_file() {
        return Err(format!("{} has no libtorch_cuda.so", lib.display()));
    }
    let cuda = cuda_include(root)?;
    let include = root.join("include");
    let compiler = cc::Build::new().cpp(true).get_compiler();
    let mut cmd: Command = compiler.to_command();
    cmd.args(["-shared", "-fPIC", "-O2", "-std=c++17", "-w"])
        .arg("-D_GLIBCXX_USE_CXX11_ABI=1")
        .arg(format!("-I{}", include.display()))
        .arg(format!(
            "-I{}",
            include.join("torch/csrc/api/include").display()
        ))
        .arg(format!("-I{}", cuda.display()))
        .arg("shim/cuda_shim.cpp")
        .arg(format!("-L{}", lib.display()))
        // Opened after libtorch_cuda.so, whose libraries are then already loaded.
        .args([
            "-Wl,--no-as-needed",
            "-ltorch_cuda",
            "-lc10_cuda",
            "-ltorch_cpu",
            "-lc10",
        ])
        .arg("-o")
        .arg(so);
    let out = cmd
        .output()
        .map_err(|e| format!("failed to run the C++ compiler: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
        return Err(format!(
            "compiling shim/cuda_shim.cpp failed: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    Ok(())
}
