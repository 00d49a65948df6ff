//! The `cargo-gpubench` binary; everything lives in the library.

fn main() -> std::process::ExitCode {
    cargo_gpubench::main()
}
