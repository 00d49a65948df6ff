//! How much CUDA-graph replay of the same calls varies from one captured graph to the
//! next in one process, through gpubench's own capture (the shim behind kernel time):
//! an add of 1M floats captured seven times, 125 calls a graph with each output
//! dropped before the next call, the last two after 20,000 eager calls. Prints one
//! line of ns per call, one figure per graph, in capture order; compare with
//! `scripts/gpu/graph-capture-variation.py`, PyTorch's own capture of the same.
//!
//! ```sh
//! cargo build --release -p gpubench-core --example graph_variation   # here
//! ./graph_variation                                                  # on a GPU machine
//! ```

use gpubench_core::__private::device::{DeviceBackend, TorchDevice};
use gpubench_core::cuda_loader;
use tch::{Device, Kind, Tensor};

/// Calls per graph.
const K: u64 = 125;

/// Median replay time per call of a fresh graph of `K` calls of `add`, ns.
fn graph_ns(dev: &TorchDevice, add: &dyn Fn() -> Tensor) -> Result<f64, String> {
    dev.capture_enter()?;
    for _ in 0..K {
        drop(add());
    }
    dev.synchronize();
    let captured = dev.capture_begin().and_then(|()| {
        for _ in 0..K {
            drop(add());
        }
        dev.capture_end()
    });
    let timed = captured.and_then(|()| {
        dev.capture_replay(1)?;
        dev.synchronize();
        let mut per_call = Vec::new();
        for _ in 0..10 {
            let mut timer = dev.timer().ok_or("no device timer")?;
            dev.synchronize();
            timer.start();
            dev.capture_replay(20)?;
            timer.stop();
            dev.synchronize();
            per_call.push(timer.elapsed_ns().ok_or("no device time")? / (20 * K) as f64);
        }
        per_call.sort_by(f64::total_cmp);
        Ok(per_call[per_call.len() / 2])
    });
    dev.capture_free();
    timed
}

fn main() -> Result<(), String> {
    cuda_loader::ensure_loaded();
    if !tch::Cuda::is_available() {
        return Err("graph_variation needs a CUDA device".into());
    }
    let device = Device::Cuda(0);
    let dev = TorchDevice::new(device);
    let n = 1i64 << 20;
    let x = Tensor::randn([n], (Kind::Float, device));
    let y = Tensor::randn([n], (Kind::Float, device));
    let add = || &x + &y;
    let mut graphs = Vec::new();
    for _ in 0..5 {
        graphs.push(graph_ns(&dev, &add)?);
    }
    for _ in 0..20_000 {
        drop(add());
    }
    dev.synchronize();
    for _ in 0..2 {
        graphs.push(graph_ns(&dev, &add)?);
    }
    let shown: Vec<String> = graphs.iter().map(|g| format!("{g:.1}")).collect();
    println!("{{\"add_1m_graph_ns\": [{}]}}", shown.join(", "));
    Ok(())
}
