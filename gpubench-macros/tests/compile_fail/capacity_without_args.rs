use gpubench_macros::gpu_bench;

struct Bencher;

#[gpu_bench(capacity = "batch")]
fn sized(b: &mut Bencher, n: usize) {
    let _ = (b, n);
}

fn main() {}
