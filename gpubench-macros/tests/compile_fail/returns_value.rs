use gpubench_macros::gpu_bench;

struct Bencher;

#[gpu_bench]
fn returns(b: &mut Bencher) -> u32 {
    let _ = b;
    1
}

fn main() {}
