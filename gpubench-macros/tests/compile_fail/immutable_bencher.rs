use gpubench_macros::gpu_bench;

struct Bencher;

#[gpu_bench]
fn f(b: &Bencher) {
    let _ = b;
}

fn main() {}
