use gpubench_macros::gpu_bench;

struct Bencher;

#[gpu_bench(args = ["a/b"])]
fn f(b: &mut Bencher, kind: &str) {
    let _ = (b, kind);
}

fn main() {}
