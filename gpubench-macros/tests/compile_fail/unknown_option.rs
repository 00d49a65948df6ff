use gpubench_macros::gpu_bench;

struct Bencher;

#[gpu_bench(iterations = 10)]
fn f(b: &mut Bencher) {
    let _ = b;
}

fn main() {}
