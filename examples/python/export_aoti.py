"""Exports the examples' transformer encoder as AOTInductor packages for the encoder bench.

The model is the one in examples/src/encoder.rs, defined again here with the same
parameter names and sizes. Python makes the weights (seeded) and writes them as
safetensors; the Rust bench loads them into its tch model, so eager tch and the
packages compute with the same numbers.

For each device (cpu, and cuda when this PyTorch sees a GPU) it writes into --out:

    encoder_<device>.safetensors    the weights
    encoder_<device>_static.pt2     exported at sequence length 64 only
    encoder_<device>_dynamic.pt2    sequence length dynamic (2 to 4096)

Each package declares its exported input shapes in its metadata under
`gpubench.input_shapes` (null for a dynamic dimension), which the bench uses to name
inputs a static package was not exported for.

Usage (from the repository root; scripts/env.sh sets GPUBENCH_PYTHON):

    $GPUBENCH_PYTHON examples/python/export_aoti.py [--out DIR] [--device cpu|cuda|all]

Compiling a package takes about a minute on a small CPU.
"""

import argparse
import json
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# Must match EncoderConfig::for_device in examples/src/encoder.rs.
CONFIGS = {
    "cpu": dict(d_model=64, heads=4, layers=2, ffn=256),
    "cuda": dict(d_model=256, heads=4, layers=2, ffn=1024),
}
STATIC_LENGTH = 64
MAX_LENGTH = 4096
INPUT_SHAPES_KEY = "gpubench.input_shapes"


class Attention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.heads = heads

    def forward(self, x):
        batch, _, d_model = x.shape
        head_dim = d_model // self.heads
        qkv = self.qkv(x).view(batch, -1, 3, self.heads, head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attended = F.scaled_dot_product_attention(q, k, v)
        return self.out(attended.transpose(1, 2).reshape(batch, -1, d_model))


class Block(nn.Module):
    def __init__(self, d_model, heads, ffn):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = Attention(d_model, heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, ffn)
        self.fc2 = nn.Linear(ffn, d_model)

    def forward(self, x):
        h = x + self.attn(self.ln1(x))
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


class Encoder(nn.Module):
    def __init__(self, d_model, heads, layers, ffn):
        super().__init__()
        self.layers = nn.ModuleList(Block(d_model, heads, ffn) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        for block in self.layers:
            x = block(x)
        return self.norm(x)


def save_safetensors(tensors, path):
    """Writes float32 tensors in the safetensors format (what tch's VarStore::load reads)."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.detach().to("cpu", torch.float32).contiguous().numpy().tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header).encode()
    head += b" " * ((8 - len(head) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for blob in blobs:
            f.write(blob)
    os.replace(tmp, path)


def export(model, example, dynamic, path, config):
    dims = {"x": {1: torch.export.Dim("seq", min=2, max=MAX_LENGTH)}} if dynamic else None
    shape = list(example.shape)
    if dynamic:
        shape[1] = None
    metadata = {
        INPUT_SHAPES_KEY: json.dumps([shape]),
        "gpubench.model": "encoder " + json.dumps(config, sort_keys=True),
    }
    start = time.time()
    with torch.no_grad():
        program = torch.export.export(model, (example,), dynamic_shapes=dims)
        torch._inductor.aoti_compile_and_package(
            program,
            package_path=path,
            inductor_configs={"aot_inductor.metadata": metadata},
        )
    print(f"wrote {path} ({time.time() - start:.0f} s)", file=sys.stderr)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        default=os.environ.get("GPUBENCH_AOTI_DIR", os.path.join(root, "packages")),
        help="directory for the weights and packages (default: $GPUBENCH_AOTI_DIR or examples/packages)",
    )
    parser.add_argument(
        "--device",
        choices=["cpu", "cuda", "all"],
        default="all",
        help="which packages to make (default: cpu, and cuda when a GPU is visible)",
    )
    args = parser.parse_args()
    devices = ["cpu", "cuda"] if args.device == "all" else [args.device]
    if args.device == "all" and not torch.cuda.is_available():
        devices = ["cpu"]
    if "cuda" in devices and not torch.cuda.is_available():
        sys.exit("error: --device cuda asked for, but this PyTorch sees no GPU")
    os.makedirs(args.out, exist_ok=True)
    for device in devices:
        config = CONFIGS[device]
        torch.manual_seed(0)
        model = Encoder(**config).to(device).eval()
        save_safetensors(model.state_dict(), os.path.join(args.out, f"encoder_{device}.safetensors"))
        example = torch.randn(1, STATIC_LENGTH, config["d_model"], device=device)
        for kind in ("static", "dynamic"):
            path = os.path.join(args.out, f"encoder_{device}_{kind}.pt2")
            export(model, example, kind == "dynamic", path, config)


if __name__ == "__main__":
    main()
