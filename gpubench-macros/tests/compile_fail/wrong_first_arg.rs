use gpubench_macros::gpu_bench;

#[gpu_bench]
fn takes_a_number(n: usize) {
    let _ = n;
}

fn main() {}
