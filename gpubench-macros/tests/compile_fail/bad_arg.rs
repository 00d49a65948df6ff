use gpubench_macros::gpu_bench;

struct Bencher;

#[gpu_bench(args = ["short", "two\nlines"])]
fn f(b: &mut Bencher, kind: &str) {
    let _ = (b, kind);
}

fn main() {}
