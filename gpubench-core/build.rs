//! Compiles the C++ shim that reaches c10's device events and allocator statistics
//! (and AOTInductor's package loader) against the same libtorch that tch links.

use std::env;
use std::path::PathBuf;

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
}
