//! How much the harness adds to what it measures: busy-waits of known length on the
//! CPU, measured with the standard settings, against their true duration.
//!
//! Run with `cargo bench -p gpubench-core --bench overhead`.

use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use gpubench_analysis::stats::median_estimate;
use gpubench_core::__private::device::{spin_until, DeviceBackend, TorchDevice};
use gpubench_core::Bencher;
use gpubench_record::measurement::MeasurementConfig;

fn main() -> ExitCode {
    if !std::env::args().any(|a| a == "--bench") {
        println!("overhead: skipped; run `cargo bench -p gpubench-core --bench overhead`");
        return ExitCode::SUCCESS;
    }
    let cpu: Rc<dyn DeviceBackend> = Rc::new(TorchDevice::new(tch::Device::Cpu));
    println!(
        "{:>10} {:>14} {:>24} {:>9}",
        "busy-wait", "reported", "95% CI", "error"
    );
    let mut worst_1ms = 0.0f64;
    for micros in [1000u64, 100, 10] {
        let wait = Duration::from_micros(micros);
        let mut b = Bencher::new("busy_wait", Rc::clone(&cpu), MeasurementConfig::standard());
        b.iter(|| spin_until(Instant::now() + wait));
        let m = b.measurement().expect("measured");
        let est = median_estimate(&m.primary_per_iter());
        let truth = wait.as_nanos() as f64;
        let error = est.point / truth - 1.0;
        if micros == 1000 {
            worst_1ms = error.abs();
        }
        println!(
            "{:>8} µs {:>11.2} µs   [{:>8.2} µs {:>8.2} µs] {:>+8.3}%",
            micros,
            est.point / 1e3,
            est.lower / 1e3,
            est.upper / 1e3,
            error * 100.0
        );
    }
    if worst_1ms <= 0.02 {
        println!("1 ms busy-wait within 2%: ok");
        ExitCode::SUCCESS
    } else {
        println!(
            "1 ms busy-wait off by {:.2}% (target 2%)",
            worst_1ms * 100.0
        );
        ExitCode::FAILURE
    }
}
