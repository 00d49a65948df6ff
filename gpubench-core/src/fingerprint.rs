//! Where a benchmark ran: device, libraries, host and commit.

use gpubench_record::record::Fingerprint;

use crate::device::{cpu_model, DeviceBackend};
use crate::shim;

/// The fingerprint of a run on `backend`.
pub fn collect(backend: &dyn DeviceBackend) -> Fingerprint {
    let device = backend.identity();
    let on_cuda = device.kind == "cuda";
    Fingerprint {
        device,
        cuda_version: on_cuda
            .then(shim::cuda_runtime_version)
            .flatten()
            .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10)),
        cudnn_version: on_cuda
            .then(shim::cudnn_version)
            .flatten()
            .map(|v| v.to_string()),
        libtorch_version: shim::torch_version(),
        tch_version: "0.24.0".into(),
        gpubench_version: env!("CARGO_PKG_VERSION").into(),
        cpu_model: cpu_model(),
        os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        git_commit: git_commit(),
        timestamp: now_rfc3339(),
        // Filled from the GPU's telemetry by the harness, which opens it once.
        gpu: None,
    }
}

/// The current time, RFC 3339 in UTC.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `GPUBENCH_GIT_COMMIT` (set by cargo-gpubench), else `git rev-parse HEAD`.
fn git_commit() -> Option<String> {
    if let Ok(c) = std::env::var(gpubench_record::protocol::GIT_COMMIT_VAR) {
        return (!c.is_empty()).then_some(c);
    }
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}
