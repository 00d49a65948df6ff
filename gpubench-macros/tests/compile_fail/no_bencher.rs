use gpubench_macros::gpu_bench;

#[gpu_bench]
fn no_arguments() {}

fn main() {}
