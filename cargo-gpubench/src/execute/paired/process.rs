//! One paired process, start to end (the hidden `cargo-gpubench __paired`): both
//! revisions' libraries loaded, the benchmark opened in each (one inside the other's
//! `ready`), alternated, and the two records written with their pairing.
//!
//! What it writes, under `--record-dir`:
//!
//! ```text
//! base/<stem>.json   the base side's record (one process, its pairing)
//! head/<stem>.json   the head side's record
//! ```
//!
//! It exits 0 when both sides passed, [`EXIT_BENCHMARK_FAILED`] when a side failed
//! (its record says how), [`EXIT_USAGE`] on bad arguments, and [`EXIT_UNPAIRABLE`]
//! when a library cannot be paired: no record is written, but [`UNPAIRABLE_FILE`]
//! with the reason, which is what the caller goes by (the benchmark's own code runs
//! in this process and may exit with any code, 75 included; it cannot write that
//! file by accident), falling back to separate processes.

use std::path::{Path, PathBuf};

use gpubench_record::failure::{Failure, FailureKind};
use gpubench_record::id::{file_stem_for_id, split_id};
use gpubench_record::measurement::MeasurementConfig;
use gpubench_record::paired::{PairedRequest, Role};
use gpubench_record::protocol::{EXIT_BENCHMARK_FAILED, EXIT_USAGE};
use gpubench_record::record::{Fingerprint, ProcessRecord, RawRecord};

use super::driver::{self, Alternation, EnergyPairing, LibrarySide};
use super::library::{Opened, PairedLibrary};

/// The exit code of a paired process whose libraries cannot be paired.
pub const EXIT_UNPAIRABLE: i32 = 75;

/// The file under `--record-dir` that says a library cannot be paired, and why.
pub const UNPAIRABLE_FILE: &str = "unpairable.txt";

/// Says under `dir` that the libraries cannot be paired, and why; the exit code.
fn unpairable(dir: &Path, why: &str) -> i32 {
    eprintln!("error: {why}");
    if let Err(e) =
        std::fs::create_dir_all(dir).and_then(|()| std::fs::write(dir.join(UNPAIRABLE_FILE), why))
    {
        eprintln!(
            "error: failed to write {}: {e}",
            dir.join(UNPAIRABLE_FILE).display()
        );
        return EXIT_USAGE;
    }
    EXIT_UNPAIRABLE
}

/// What one paired process measures.
#[derive(Debug, Clone)]
pub struct ProcessPlan {
    /// The base revision's library; `None` for a benchmark only the head has,
    /// measured alone.
    pub base: Option<PathBuf>,
    /// The head revision's library; `None` when the base is measured alone.
    pub head: Option<PathBuf>,
    /// The one side this process measures alone, when it measures one.
    pub alone: Option<Role>,
    /// The benchmark id.
    pub id: String,
    /// Which process of the benchmark this is (1 for the first).
    pub process: u32,
    /// `--device`.
    pub device: Option<String>,
    /// How to measure, for both sides alike.
    pub config: MeasurementConfig,
    /// The directory the base's code runs in ([`driver::enter`]).
    pub base_dir: Option<PathBuf>,
    /// The directory the head's code runs in.
    pub head_dir: Option<PathBuf>,
    /// Where the two records go.
    pub record_dir: PathBuf,
}

/// Runs a paired process with `args` (after `__paired`) and exits with its code,
/// without the libraries' teardown: as a harness does, the records are written and
/// the output flushed, and libtorch's and CUDA's teardown would cost a fifth of a
/// second per process.
pub fn main(args: &[std::ffi::OsString]) -> ! {
    use clap::Parser;
    use std::io::Write;
    let code = match crate::execute::paired::args::PairedArgs::try_parse_from(args) {
        Err(e) => {
            let _ = e.print();
            EXIT_USAGE
        }
        Ok(args) => match (&args.list, ProcessPlan::of(&args)) {
            (Some(lib), _) => list(lib),
            (None, Ok(plan)) => run(&plan),
            (None, Err(why)) => {
                eprintln!("error: {why}");
                EXIT_USAGE
            }
        },
    };
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: _exit(2) ends the process at once; nothing of this process runs after.
    unsafe { libc::_exit(code) }
}

impl ProcessPlan {
    /// The directory `role`'s code runs in, when given.
    fn dir(&self, role: Role) -> Option<&Path> {
        match role {
            Role::Base => self.base_dir.as_deref(),
            Role::Head => self.head_dir.as_deref(),
        }
    }

    /// The plan `args` give.
    fn of(args: &crate::execute::paired::args::PairedArgs) -> Result<Self, String> {
        let need = |what: &str| format!("a paired process needs {what}");
        let config = args.config.as_deref().ok_or_else(|| need("--config"))?;
        let alone = match (args.alone.as_deref(), &args.base, &args.head) {
            (Some("base"), Some(_), _) => Some(Role::Base),
            (Some("base"), None, _) => return Err(need("--base with --alone base")),
            (None, Some(_), Some(_)) => None,
            (Some(_), _, Some(_)) | (None, None, Some(_)) => Some(Role::Head),
            (_, _, None) => return Err(need("--head")),
        };
        Ok(ProcessPlan {
            base: args.base.clone(),
            head: args.head.clone(),
            alone,
            id: args.id.clone().ok_or_else(|| need("--id"))?,
            process: args.process.max(1),
            device: args.device.clone(),
            config: serde_json::from_str(config)
                .map_err(|e| format!("failed to read --config: {e}"))?,
            record_dir: args
                .record_dir
                .clone()
                .ok_or_else(|| need("--record-dir"))?,
            base_dir: args.base_dir.clone(),
            head_dir: args.head_dir.clone(),
        })
    }
}

/// Lists the benchmarks of `library` as JSON on stdout (`__paired --list`); its
/// exit code.
pub fn list(library: &Path) -> i32 {
    match PairedLibrary::load(library).and_then(|l| l.list()) {
        Ok(listed) => {
            println!(
                "{}",
                serde_json::to_string(&listed).expect("plain data serialises")
            );
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_UNPAIRABLE
        }
    }
}

/// Runs `plan`; its exit code (module docs).
pub fn run(plan: &ProcessPlan) -> i32 {
    let load = |p: &Path| PairedLibrary::load(p);
    let (Some(base_path), Some(head_path), None) = (&plan.base, &plan.head, plan.alone) else {
        return run_alone(plan);
    };
    let (base, head) = match (load(base_path), load(head_path)) {
        (Ok(b), Ok(h)) => (b, h),
        (Err(e), _) | (_, Err(e)) => return unpairable(&plan.record_dir, &e.to_string()),
    };
    let base_first = plan.process % 2 == 1;
    let request = |role| PairedRequest {
        id: plan.id.clone(),
        role,
        device: plan.device.clone(),
        config: plan.config.clone(),
        process: plan.process,
    };
    let (first_role, second_role) = if base_first {
        (Role::Base, Role::Head)
    } else {
        (Role::Head, Role::Base)
    };
    let library = |role| match role {
        Role::Base => &base,
        Role::Head => &head,
    };
    let dir = |role| plan.dir(role);

    let mut alternation: Option<Result<Alternation, Role>> = None;
    let mut energy: Option<EnergyPairing> = None;
    let mut second: Option<Result<Opened, String>> = None;
    driver::enter(dir(first_role));
    let first = library(first_role).open(&request(first_role), &mut |first_side| {
        driver::enter(dir(second_role));
        let opened = library(second_role).open(&request(second_role), &mut |second_side| {
            let version = |role| library(role).version();
            let mut a = LibrarySide(first_side, dir(first_role), version(first_role));
            let mut b = LibrarySide(second_side, dir(second_role), version(second_role));
            let (base_side, head_side) = if base_first {
                (&mut a, &mut b)
            } else {
                (&mut b, &mut a)
            };
            let alternated = driver::alternate(base_side, head_side, base_first, &plan.config);
            if alternated.is_ok() {
                energy = Some(driver::pair_energy(base_side, head_side, base_first));
            }
            alternation = Some(alternated);
        });
        // The first side's code goes on (its teardown, or measuring alone) in its
        // own directory.
        driver::enter(dir(first_role));
        if alternation.is_none() {
            // The second side never handed over its routine: the first is measured
            // alone, in this same process.
            driver::alone(
                &mut LibrarySide(first_side, dir(first_role), library(first_role).version()),
                &plan.config,
            );
        }
        second = Some(opened.map_err(|e| e.to_string()));
    });
    let first = first.map_err(|e| e.to_string());
    if second.is_none() {
        // The first side never handed over its routine (it measured itself, or
        // failed first): the second is measured on its own too, in this process.
        driver::enter(dir(second_role));
        second = Some(
            library(second_role)
                .open(&request(second_role), &mut |side| {
                    let version = library(second_role).version();
                    driver::alone(
                        &mut LibrarySide(side, dir(second_role), version),
                        &plan.config,
                    );
                })
                .map_err(|e| e.to_string()),
        );
    }
    let second = second.expect("the second side was opened");
    let (base_opened, head_opened) = if base_first {
        (first, second)
    } else {
        (second, first)
    };
    let alternation = alternation.and_then(Result::ok);
    let mut base_record = record_of(base_opened, &plan.id, plan.process, &plan.config);
    let mut head_record = record_of(head_opened, &plan.id, plan.process, &plan.config);
    if let Some((b, h)) = driver::pairing(
        &base_record,
        &head_record,
        base_first,
        alternation.as_ref(),
        energy.as_ref(),
    ) {
        if let Some(process) = base_record.processes.first_mut() {
            process.pairing = Some(b);
        }
        if let Some(process) = head_record.processes.first_mut() {
            process.pairing = Some(h);
        }
    }
    for (role, record) in [(Role::Base, &base_record), (Role::Head, &head_record)] {
        if let Err(e) = write(&plan.record_dir, role, record) {
            eprintln!(
                "error: failed to write the {} record of {}: {e}",
                role.as_str(),
                plan.id
            );
            return EXIT_USAGE;
        }
    }
    if base_record.passed() && head_record.passed() {
        0
    } else {
        EXIT_BENCHMARK_FAILED
    }
}

/// One side measured alone, in a process of its own, with the driver's loop: a
/// benchmark only the head has, or one side of a benchmark whose pairing failed. Only
/// that side's folder is written.
fn run_alone(plan: &ProcessPlan) -> i32 {
    let role = plan.alone.unwrap_or(Role::Head);
    let path = match role {
        Role::Base => plan.base.as_ref(),
        Role::Head => plan.head.as_ref(),
    };
    let Some(path) = path else {
        eprintln!(
            "error: a paired process needs the {} library",
            role.as_str()
        );
        return EXIT_USAGE;
    };
    let library = match PairedLibrary::load(path) {
        Ok(l) => l,
        Err(e) => return unpairable(&plan.record_dir, &e.to_string()),
    };
    let request = PairedRequest {
        id: plan.id.clone(),
        role,
        device: plan.device.clone(),
        config: plan.config.clone(),
        process: plan.process,
    };
    driver::enter(plan.dir(role));
    let opened = library
        .open(&request, &mut |side| {
            driver::alone(
                &mut LibrarySide(side, plan.dir(role), library.version()),
                &plan.config,
            );
        })
        .map_err(|e| e.to_string());
    let record = record_of(opened, &plan.id, plan.process, &plan.config);
    if let Err(e) = write(&plan.record_dir, role, &record) {
        eprintln!(
            "error: failed to write the {} record of {}: {e}",
            role.as_str(),
            plan.id
        );
        return EXIT_USAGE;
    }
    if record.passed() {
        0
    } else {
        EXIT_BENCHMARK_FAILED
    }
}

/// The record a side gave, or a failed one saying why it gave none.
fn record_of(
    opened: Result<Opened, String>,
    id: &str,
    process: u32,
    config: &MeasurementConfig,
) -> RawRecord {
    let why = match opened {
        Ok(Opened::Record(r)) => return *r,
        Ok(Opened::Error(e)) | Err(e) => e,
    };
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let mut first = ProcessRecord::first(now.clone());
    first.process = process;
    first.failure = Some(Failure::new(FailureKind::Setup, why));
    let (name, arg) = split_id(id);
    RawRecord::new(
        id,
        name,
        arg.map(str::to_string),
        Fingerprint::unknown("default", now),
        config.clone(),
        first,
    )
}

/// `<dir>/<role>/<stem>.json`, through a temporary file and a rename.
fn write(dir: &Path, role: Role, record: &RawRecord) -> std::io::Result<()> {
    let dir = dir.join(role.as_str());
    std::fs::create_dir_all(&dir)?;
    let stem = file_stem_for_id(&record.id);
    let tmp = dir.join(format!(".{stem}.json.tmp"));
    std::fs::write(&tmp, record.to_json_pretty())?;
    std::fs::rename(&tmp, dir.join(format!("{stem}.json")))
}
