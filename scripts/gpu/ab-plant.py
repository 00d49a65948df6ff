#!/usr/bin/env python3
"""Plants the changes `cargo gpubench ab` must find, in a copy of the examples (run by
scripts/gpu/ab-build.sh in a throwaway git worktree, never in the checkout):

* launch-bound benchmarks (launch/add_1m, sdpa, request_stream, scalar_readback)
  busy-wait on the host for 5% of their own per-call time before each call, a cost
  that launches no kernel: the routine is timed once at setup, in the process that
  measures it, so the 5% holds in a fast host mode and in a slow one;
* device-bound matmuls (matmul_f32, matmul_bf16) do 3% more work for real: one more
  matmul over the first 3% of the rows (the examples' own planted-slowdown path,
  GPUBENCH_EXAMPLE_SLOWDOWN, defaulting to 1.03 instead of 1).

Usage: ab-plant.py EXAMPLES_DIR
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])

launch = root / "benches" / "launch.rs"
text = launch.read_text()
helper = '''
/// Planted by scripts/gpu/ab-plant.py: the host-side cost `ab` must find, 5% of
/// one call as this process measures it at setup; it launches no kernel.
fn planted_spin<O>(device: tch::Device, routine: &mut impl FnMut() -> O) -> std::time::Duration {
    let device_sync = || {
        if let tch::Device::Cuda(i) = device {
            tch::Cuda::synchronize(i as i64);
        }
    };
    for _ in 0..50 {
        drop(routine());
    }
    device_sync();
    let t0 = std::time::Instant::now();
    for _ in 0..200 {
        drop(routine());
    }
    device_sync();
    t0.elapsed().mul_f64(0.05 / 200.0)
}

fn spin_for(d: std::time::Duration) {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < d {
        std::hint::spin_loop();
    }
}
'''
text = text.replace("use tch::{Kind, Tensor};\n", "use tch::{Kind, Tensor};\n" + helper, 1)

def plant(body_re, text):
    """Wraps the routine closure of the `b.iter(|| EXPR)` matched by body_re."""
    m = re.search(body_re, text, re.S)
    assert m, body_re
    expr = m.group(1)
    new = ("let mut routine = || " + expr + ";\n    let extra = planted_spin(b.device(), &mut routine);\n"
           "    b.iter(move || {\n        spin_for(extra);\n        routine()\n    });")
    return text[: m.start()] + new + text[m.end():]

# add_1m without the extra kernel.
text = plant(r"b\.iter\(\|\| (&x \+ &y)\);", text)
# sdpa.
text = plant(r"b\.iter\(\|\| \{\s*(Tensor::scaled_dot_product_attention\(.*?\))\s*\}\);", text)
# scalar_readback.
text = plant(r"b\.iter\(\|\| (x\.sum\(Kind::Float\)\.double_value\(&\[\]\))\);", text)
# request_stream: iter_inputs; spin inside the routine, sized on the first input.
m = re.search(r"b\.iter_inputs\(inputs, \|x\| \{(.*?)\}\);", text, re.S)
assert m
body = m.group(1)
text = (text[: m.start()]
        + "let first = inputs[0].shallow_clone();\n"
        + "    let mut once = || {" + body.replace("x.", "first.") + "};\n"
        + "    let extra = planted_spin(b.device(), &mut once);\n"
        + "    b.iter_inputs(inputs, move |x| {\n        spin_for(extra);" + body + "});"
        + text[m.end():])
launch.write_text(text)

matmul = root / "benches" / "matmul.rs"
text = matmul.read_text()
old = "        Err(_) => 1.0,\n"
assert old in text
matmul.write_text(text.replace(old, "        Err(_) => 1.03,\n", 1))
print("planted: launch (5% host-side spin) and matmul (3% more rows)")
