//! Capacity baselines: where they are kept (beside the run baselines), reading and
//! writing a result, judging the searches against one and saving them as one.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use gpubench_analysis::capacity::{self, CapacityFinding, CapacityResult, SearchEnd};
use gpubench_record::id::file_stem_for_id;

use crate::console;
use crate::exit_code::UsageError;
use crate::output::json::pretty_json;
use crate::store::baselines::{Wanted, DEFAULT_BASELINE};

/// `<baselines-dir>/../capacity`: beside the baselines, not inside one, so a
/// baseline's reader never meets a file it does not know. A relative
/// `--baselines-dir` stays relative (the current directory is `""`), so messages
/// name it as it was given.
pub(super) fn capacity_baselines_dir(
    baselines_dir: Option<&Path>,
    workspace_root: &Path,
) -> PathBuf {
    crate::store::baselines::store(baselines_dir, workspace_root, Path::new(""))
        .root
        .parent()
        .map_or_else(|| PathBuf::from("capacity"), |p| p.join("capacity"))
}

pub(super) fn write_json(path: &Path, r: &CapacityResult) -> Result<()> {
    std::fs::write(path, pretty_json(r))
        .with_context(|| format!("failed to write {}", path.display()))
}

/// A saved result; `Ok(None)` when there is no file.
pub(super) fn read_result(path: &Path) -> Result<Option<CapacityResult>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("failed to read {}", path.display())),
    };
    let r: CapacityResult = serde_json::from_str(&text)
        .with_context(|| format!("failed to parse the capacity result {}", path.display()))?;
    if r.version > capacity::CAPACITY_FORMAT_VERSION {
        return Err(UsageError(format!(
            "{} is of capacity format {}, newer than this cargo-gpubench reads ({}): upgrade cargo-gpubench",
            path.display(),
            r.version,
            capacity::CAPACITY_FORMAT_VERSION
        ))
        .into());
    }
    Ok(Some(r))
}

/// The whole searches `finished` judged against the capacity baseline `wanted`
/// (`main` when it exists, by default): the findings, and what the baseline lacks.
pub(super) fn judge(
    wanted: Wanted,
    baselines: &Path,
    finished: &[&CapacityResult],
) -> Result<(Vec<CapacityFinding>, Vec<String>)> {
    let mut findings = Vec::new();
    let mut missing = Vec::new();
    let (name, explicit) = match wanted {
        Wanted::None => return Ok((findings, missing)),
        Wanted::Default => (DEFAULT_BASELINE.to_string(), false),
        Wanted::Named(name) => (name, true),
    };
    let dir = baselines.join(&name);
    if dir.is_dir() || explicit {
        for r in finished {
            let file = dir.join(format!("{}.json", file_stem_for_id(&r.name)));
            match read_result(&file)? {
                Some(base) => findings.push(capacity::compare(&base, r)),
                None => missing.push(format!(
                    "{}: the capacity baseline `{name}` has no {}",
                    r.name,
                    file.display()
                )),
            }
        }
    }
    Ok((findings, missing))
}

/// `--save-baseline NAME`: saves the whole searches `finished` (of `searched`) as
/// the capacity baseline `name`, but for those where nothing fits.
pub(super) fn save(
    name: &str,
    baselines: &Path,
    finished: &[&CapacityResult],
    searched: usize,
) -> Result<()> {
    let dir = baselines.join(name);
    let mut saved = 0;
    for r in finished {
        if r.end == SearchEnd::NothingFits {
            console::warning(format_args!(
                "{} not saved in the capacity baseline `{name}`: nothing fits",
                r.name
            ));
            continue;
        }
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("failed to create {}", dir.display()))?;
        write_json(&dir.join(format!("{}.json", file_stem_for_id(&r.name))), r)?;
        saved += 1;
    }
    if saved > 0 {
        console::status(format_args!(
            "saved capacity baseline `{name}` in {} ({saved} of {searched} searches)",
            dir.display(),
        ));
    } else {
        console::warning(format_args!(
            "capacity baseline `{name}` not saved: no search finished with a size that fits"
        ));
    }
    Ok(())
}
