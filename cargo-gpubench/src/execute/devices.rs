//! Which devices a run measures on: `--device` and `--devices` as given, and the
//! devices they name as a bench executable sees them (label and model), asked once
//! before the run so an unavailable device, or GPUs of different models, stop it
//! before it spends time.

use std::fmt;
use std::path::Path;
use std::process::Command;
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::execute::process::{self, ChildEnv, Ending};
use crate::exit_code::UsageError;

/// `s` when it names a device (`cpu`, `cuda` or `cuda:N`), else why not.
pub(crate) fn parse_label(s: &str) -> Result<String, String> {
    let ok = s == "cpu"
        || s == "cuda"
        || s.strip_prefix("cuda:")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("`{s}` is not a device: use cpu, cuda or cuda:N"))
    }
}

/// `--devices`: every device the harness sees, or a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceList {
    /// `all`.
    All,
    /// `cuda:0,cuda:1,…`: distinct, in the order given.
    Listed(Vec<String>),
}

impl FromStr for DeviceList {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "all" {
            return Ok(DeviceList::All);
        }
        let mut listed: Vec<String> = Vec::new();
        for item in s.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(format!(
                    "`{s}` has an empty item: list devices as cuda:0,cuda:1 or give `all`"
                ));
            }
            // `cuda` is the harness's `cuda:0`: the same GPU must not appear twice.
            let label = match parse_label(item)?.as_str() {
                "cuda" => "cuda:0".to_string(),
                other => other.to_string(),
            };
            if listed.contains(&label) {
                return Err(format!(
                    "`{label}` is listed twice in `{s}`: a device runs one benchmark process at a time"
                ));
            }
            listed.push(label);
        }
        Ok(DeviceList::Listed(listed))
    }
}

impl fmt::Display for DeviceList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceList::All => f.write_str("all"),
            DeviceList::Listed(labels) => f.write_str(&labels.join(",")),
        }
    }
}

/// A device as a bench executable names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Device {
    /// `cuda:1`, `cpu`.
    pub label: String,
    /// Its model, e.g. `NVIDIA H200`.
    pub model: String,
}

impl Device {
    /// Parses a `<label> <model>` line of `--check-device` or `--list-devices`.
    fn from_line(line: &str) -> Option<Device> {
        let (label, model) = line.trim().split_once(' ')?;
        Some(Device {
            label: label.to_string(),
            model: model.trim().to_string(),
        })
    }
}

/// Asks `exe` whether `device` is there; an unavailable one is a usage error that
/// says why, naming it as `asked` (`--device cuda:7`), so it stops the run before it
/// starts instead of failing every benchmark.
pub(crate) fn check(
    exe: &Path,
    device: &str,
    asked: &str,
    env: &ChildEnv,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<Device> {
    let mut cmd = Command::new(exe);
    cmd.args(["--check-device", "--device", device]);
    env.apply(&mut cmd);
    let finished = process::run(cmd, timeout, stop, process::TAIL_BYTES)
        .with_context(|| format!("failed to run {} to check --device", exe.display()))?;
    match finished.ending {
        Ending::Exited(0) => Ok(finished
            .stdout_tail
            .lines()
            .rev()
            .find_map(Device::from_line)
            .unwrap_or_else(|| Device {
                label: device.to_string(),
                model: "unknown".to_string(),
            })),
        Ending::Exited(2) => {
            let why = finished
                .stderr_tail
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .trim_start_matches("error: ")
                .to_string();
            Err(UsageError(format!("{asked} is not available here: {why}")).into())
        }
        other => Err(anyhow::anyhow!(
            "failed to check device {device} with {} ({other:?}): {}",
            exe.display(),
            finished.stderr_tail.trim()
        )),
    }
}

/// The devices `list` names, as `exe` sees them: every one it lists for `all`, each
/// one checked otherwise. Devices of different models are refused: a run's records
/// are compared per model, and a benchmark must not land on another model from one
/// run to the next.
pub(crate) fn resolve(
    list: &DeviceList,
    exe: &Path,
    env: &ChildEnv,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<Vec<Device>> {
    let devices = match list {
        DeviceList::Listed(labels) => labels
            .iter()
            .map(|label| {
                let asked = format!("{label} (of --devices {list})");
                check(exe, label, &asked, env, timeout, stop)
            })
            .collect::<Result<Vec<_>>>()?,
        DeviceList::All => list_all(exe, env, timeout, stop)?,
    };
    one_model(list, &devices)?;
    Ok(devices)
}

/// Every device `exe` sees (`--list-devices`).
fn list_all(
    exe: &Path,
    env: &ChildEnv,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<Vec<Device>> {
    let mut cmd = Command::new(exe);
    cmd.arg("--list-devices");
    env.apply(&mut cmd);
    let finished = process::run(cmd, timeout, stop, process::TAIL_BYTES)
        .with_context(|| format!("failed to run {} to list its devices", exe.display()))?;
    let devices: Vec<Device> = finished
        .stdout_tail
        .lines()
        .filter(|l| !l.starts_with("gpubench-harness "))
        .filter_map(Device::from_line)
        .collect();
    match finished.ending {
        Ending::Exited(0) if !devices.is_empty() => Ok(devices),
        other => Err(anyhow::anyhow!(
            "failed to list the devices of {} for --devices all ({other:?}); a harness built \
             with an older gpubench-core cannot: rebuild it, or list the devices, e.g. \
             --devices cuda:0,cuda:1\n{}",
            exe.display(),
            finished.stderr_tail.trim()
        )),
    }
}

/// Refuses devices of more than one model.
fn one_model(list: &DeviceList, devices: &[Device]) -> Result<(), UsageError> {
    let first = &devices[0];
    if devices.iter().all(|d| d.model == first.model) {
        return Ok(());
    }
    let named: Vec<String> = devices
        .iter()
        .map(|d| format!("{} {}", d.label, d.model))
        .collect();
    Err(UsageError(format!(
        "--devices {list}: the devices are of different models ({}); results of different \
         models are never pooled in one run: list the devices of one model, and run once \
         per model",
        named.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_to_distinct_devices_and_all_stays_all() {
        assert_eq!("all".parse(), Ok(DeviceList::All));
        assert_eq!(
            "cuda:0, cuda:1".parse(),
            Ok(DeviceList::Listed(vec!["cuda:0".into(), "cuda:1".into()]))
        );
        let twice = "cuda,cuda:0".parse::<DeviceList>().unwrap_err();
        assert!(twice.contains("`cuda:0` is listed twice"), "{twice}");
        assert!("cuda:0,,cuda:1".parse::<DeviceList>().is_err());
        let bad = "gpu0".parse::<DeviceList>().unwrap_err();
        assert!(bad.contains("`gpu0` is not a device"), "{bad}");
        assert_eq!(
            "cuda:2,cuda:0".parse::<DeviceList>().unwrap().to_string(),
            "cuda:2,cuda:0"
        );
    }

    #[test]
    fn devices_of_two_models_are_refused_naming_them() {
        let d = |label: &str, model: &str| Device {
            label: label.into(),
            model: model.into(),
        };
        let same = [d("cuda:0", "NVIDIA H200"), d("cuda:1", "NVIDIA H200")];
        assert!(one_model(&DeviceList::All, &same).is_ok());
        let mixed = [
            d("cuda:0", "NVIDIA H200"),
            d("cuda:1", "NVIDIA A100-SXM4-80GB"),
        ];
        let e = one_model(&DeviceList::All, &mixed).unwrap_err().0;
        assert!(
            e.contains("cuda:0 NVIDIA H200, cuda:1 NVIDIA A100-SXM4-80GB"),
            "{e}"
        );
        assert!(e.starts_with("--devices all:"), "{e}");
        assert_eq!(
            Device::from_line("cuda:1 NVIDIA H200\n"),
            Some(d("cuda:1", "NVIDIA H200"))
        );
    }
}
