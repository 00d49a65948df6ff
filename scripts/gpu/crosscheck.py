"""Cross-checks gpubench's device times against an independent CUDA-event
measurement made with PyTorch, on the same GPU, operation by operation.

For each benchmark id, the Rust bench executable (`--bench --exact ID`) and the
PyTorch reference (`cuda_event_reference.py --only ID`) run back to back, twice, in
alternating order, so clock and thermal drift hit both alike. The table compares the
median of the two runs of each.

Usage: python3 crosscheck.py BIN_DIR OUT_DIR
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

OPS = {
    "matmul": ["matmul_f32/1024", "matmul_bf16/1024", "matmul_f32/4096",
               "matmul_bf16/4096", "matmul_f32/8192", "matmul_bf16/8192"],
    "mlp_training": ["mlp_training_step"],
}
HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "..", "examples", "python", "cuda_event_reference.py")



def rust_device_ns(exe, op_id):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, GPUBENCH_RECORD_DIR=d)
        subprocess.run([exe, "--bench", "--exact", op_id], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        [name] = os.listdir(d)
        with open(os.path.join(d, name)) as f:
            record = json.load(f)
    samples = record["measurement"]["samples"]
    return statistics.median(s["device_ns"] / s["iters"] for s in samples)


def python_device_ns(op_id):
    out = subprocess.run([sys.executable, REFERENCE, "--only", op_id], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)[op_id]["median_ns"]


def main():
    bin_dir, out_dir = sys.argv[1], sys.argv[2]
    rows = []
    for target, ids in OPS.items():
        exe = os.path.join(bin_dir, target)
        for op_id in ids:
            rust, torch_ref = [], []
            for order in (0, 1):
                runs = [lambda: rust.append(rust_device_ns(exe, op_id)),
                        lambda: torch_ref.append(python_device_ns(op_id))]
                for run in (runs if order == 0 else runs[::-1]):
                    run()
            r, p = statistics.median(rust), statistics.median(torch_ref)
            rows.append({"id": op_id, "gpubench_ns": r, "pytorch_events_ns": p,
                         "diff_pct": 100.0 * (r / p - 1.0), "gpubench_runs": rust,
                         "pytorch_runs": torch_ref})
            print(f"{op_id:24} gpubench {r/1e3:10.2f} us  pytorch {p/1e3:10.2f} us  "
                  f"diff {100.0 * (r / p - 1.0):+6.2f}%", flush=True)
    with open(os.path.join(out_dir, "crosscheck.json"), "w") as f:
        json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
