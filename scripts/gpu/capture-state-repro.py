#!/usr/bin/env python3
"""The root cause of issue 34's failed `ab` pairs, in PyTorch itself: a CUDA-graph
capture of a routine that reads a value back fails, and the next `randn` outside any
capture then fails too ("Offset increment outside graph capture encountered
unexpectedly"), because CUDAGraph.capture_end threw before it put the generator back.
gpubench's shim undoes that state (Graph::abandon in gpubench-core/shim/cuda_shim.cpp);
this script shows the state is left by libtorch and that setting it back is enough.
"""
import torch

x = torch.randn(1024, device="cuda")
g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    try:
        g.capture_begin()
        y = (x * 2).sum().item()  # a read-back: not allowed while capturing
    except Exception as e:
        print("capture failed as expected:", str(e).splitlines()[0])
    try:
        g.capture_end()
    except Exception as e:
        print("capture_end raised:", str(e).splitlines()[0])
torch.cuda.synchronize()
try:
    torch.randn(16, device="cuda")
    print("randn after the failed capture: ok (libtorch cleaned up by itself)")
except Exception as e:
    print("randn after the failed capture FAILED:", str(e).splitlines()[0])
