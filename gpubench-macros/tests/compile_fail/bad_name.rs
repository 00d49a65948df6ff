use gpubench_macros::gpu_bench;

struct Bencher;

#[gpu_bench(name = "")]
fn f(b: &mut Bencher) {
    let _ = b;
}

fn main() {}
