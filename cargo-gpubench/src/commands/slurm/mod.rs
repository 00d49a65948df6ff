//! `cargo gpubench slurm`: a suite measured over a GPU cluster. `slurm run` builds
//! the archive once into a shared directory ([`layout`]), submits an array job of one
//! task per `--partition` part, each on a GPU of its own, and a merge job that
//! depends on it ([`script`], [`scheduler`]); the merge job ([`collect`]) folds the
//! parts' runs into one run, names every part whose task did not leave a completed
//! run with its Slurm state and reason, compares and gates. `slurm ab` does the same
//! with both revisions' libraries exported once (`ab --export-libraries`), each task
//! running `ab --partition K/N`, merged into one paired `ab` run. `slurm resubmit`
//! submits the lost parts again, `slurm follow` (or `--wait`) follows the tasks and
//! exits with the gate's code, and `--kubernetes` writes the parts as an Indexed Job
//! instead ([`kubernetes`]).

pub mod collect;
pub mod kubernetes;
pub mod layout;
pub mod scheduler;
pub mod script;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::cli::{SlurmAbArgs, SlurmAction, SlurmArgs, SlurmJobArgs, SlurmRunArgs, TargetArgs};
use crate::console;
use crate::exit_code::{Exit, UsageError};
use layout::{Attempt, Job, Sbatch, JOB_FILE, JOB_FORMAT_VERSION};

/// Runs `slurm`'s action.
pub fn run(args: &SlurmArgs) -> Result<Exit> {
    match &args.action {
        SlurmAction::Run(a) => submit_run(a),
        SlurmAction::Ab(a) => submit_ab(a),
        SlurmAction::Resubmit(a) => resubmit(&absolute(&a.dir)?, a.wait),
        SlurmAction::Follow(a) => follow(&Job::read(&absolute(&a.dir)?)?),
        SlurmAction::Collect(a) => collect::run(&absolute(&a.dir)?),
    }
}

fn absolute(dir: &Path) -> Result<PathBuf> {
    std::path::absolute(dir).with_context(|| format!("failed to resolve {}", dir.display()))
}

/// The new job of `common` in its shared directory, not yet written: the
/// directory checked and made, the cargo-gpubench the tasks run chosen.
fn new_job(common: &SlurmJobArgs, run_args: &[String], kubernetes: bool) -> Result<Job> {
    let dir = absolute(&common.dir)?;
    if dir.join(JOB_FILE).exists() {
        return Err(UsageError(format!(
            "{} already holds a slurm job ({JOB_FILE}): give a new --dir, or `cargo gpubench \
             slurm resubmit {}` to measure its lost parts again",
            dir.display(),
            dir.display()
        ))
        .into());
    }
    let text = dir.display().to_string();
    if text.chars().any(char::is_whitespace) {
        return Err(UsageError(format!(
            "--dir {text} holds white space, which #SBATCH lines cannot carry: pick a \
             directory without"
        ))
        .into());
    }
    if let Some(line) = common.sbatch.extra.iter().find(|l| l.contains('\n')) {
        return Err(UsageError(format!(
            "--sbatch `{line}` holds a new line: give one line per --sbatch"
        ))
        .into());
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("failed to create {}", dir.display()))?;
    let bin = match (&common.sbatch.bin, kubernetes) {
        (Some(bin), _) => absolute(bin)?,
        // A pod sees the shared directory, not this machine's files.
        (None, true) => {
            let to = dir.join("bin/cargo-gpubench");
            std::fs::create_dir_all(dir.join("bin"))?;
            std::fs::copy(std::env::current_exe()?, &to)
                .with_context(|| format!("failed to copy cargo-gpubench to {}", to.display()))?;
            to
        }
        (None, false) => std::env::current_exe().context("failed to find this cargo-gpubench")?,
    };
    let job = Job {
        format_version: JOB_FORMAT_VERSION,
        dir: dir.clone(),
        parts: common.parts,
        bin,
        run_args: run_args.to_vec(),
        merge_args: common.merge_args.clone(),
        ab_libraries: None,
        sbatch: Sbatch {
            partition: common.sbatch.slurm_partition.clone(),
            account: common.sbatch.account.clone(),
            time: common.sbatch.time.clone(),
            max_running: common.sbatch.max_running,
            gres: common.sbatch.gres.clone(),
            extra: common.sbatch.extra.clone(),
        },
        attempts: Vec::new(),
    };
    for d in [
        job.scripts(),
        job.tasks(),
        job.logs(),
        job.dir.join("results"),
    ] {
        std::fs::create_dir_all(&d).with_context(|| format!("failed to create {}", d.display()))?;
    }
    Ok(job)
}

/// Submits every part of `job`, then follows it or says how to.
fn submit_all(mut job: Job, wait: bool) -> Result<Exit> {
    let parts: Vec<u32> = (1..=job.parts).collect();
    submit(&mut job, &parts)?;
    if wait {
        return follow(&job);
    }
    say_how_to_follow(&job);
    Ok(Exit::Success)
}

/// `slurm ab`: both revisions' libraries exported once (or given), then the parts.
fn submit_ab(args: &SlurmAbArgs) -> Result<Exit> {
    let mut job = new_job(&args.job, &args.ab_args, false)?;
    let libraries = match &args.libraries {
        Some(given) => absolute(given)?,
        None => {
            let to = job.dir.join("libraries");
            let mut cmd = std::process::Command::new(std::env::current_exe()?);
            cmd.arg("ab").arg("--export-libraries").arg(&to);
            if let Some(base) = &args.base {
                cmd.args(["--base", base]);
            }
            if let Some(head) = &args.head {
                cmd.args(["--head", head]);
            }
            target_args(&mut cmd, &args.targets);
            let status = cmd
                .status()
                .context("failed to run cargo-gpubench ab --export-libraries")?;
            match status.code() {
                Some(0) => {}
                Some(code) => return Ok(exit_of_code(u8::try_from(code).unwrap_or(5))),
                None => return Ok(Exit::Interrupted),
            }
            if !to.join("base").is_dir() {
                // `ab` found nothing to compare (base and head the same code): said so.
                return Ok(Exit::Success);
            }
            to
        }
    };
    job.ab_libraries = Some(libraries);
    submit_all(job, args.job.wait)
}

/// `slurm run`: the archive, the scripts, the submission.
fn submit_run(args: &SlurmRunArgs) -> Result<Exit> {
    let mut job = new_job(&args.job, &args.run_args, args.kubernetes.is_some())?;
    let dir = job.dir.clone();
    match &args.archive {
        Some(given) => {
            std::fs::copy(given, job.archive()).with_context(|| {
                format!(
                    "failed to copy {} to {}",
                    given.display(),
                    job.archive().display()
                )
            })?;
        }
        None => {
            let mut cmd = std::process::Command::new(std::env::current_exe()?);
            cmd.arg("archive").arg("-o").arg(job.archive());
            target_args(&mut cmd, &args.targets);
            let status = cmd
                .status()
                .context("failed to run cargo-gpubench archive")?;
            match status.code() {
                Some(0) => {}
                Some(code) => return Ok(exit_of_code(u8::try_from(code).unwrap_or(5))),
                None => return Ok(Exit::Interrupted),
            }
        }
    }
    extract_baselines(&job)?;

    if let (Some(file), Some(image)) = (&args.kubernetes, &args.image) {
        let name = format!(
            "gpubench-parts-{}",
            chrono::Utc::now().format("%Y%m%d%H%M%S")
        );
        let yaml = kubernetes::indexed_job(
            &job,
            &kubernetes::Pods {
                name: &name,
                image,
                volume_claim: &args.volume_claim,
            },
        );
        crate::store::runs::write_atomic(file, yaml.as_bytes())?;
        job.attempts.push(Attempt {
            array_job: name.clone(),
            merge_job: String::new(),
            parts: (1..=job.parts).collect(),
            submitted_at: now(),
        });
        job.write()?;
        console::status(format_args!(
            "wrote the Kubernetes Indexed Job `{name}` ({} parts, one GPU each) to {}: \
             `kubectl apply -f {}`, and once it ended `cargo-gpubench slurm collect {}` \
             merges, compares and gates",
            job.parts,
            file.display(),
            file.display(),
            dir.display()
        ));
        return Ok(Exit::Success);
    }

    submit_all(job, args.job.wait)
}

/// `--manifest-path`, `-p` and `--bench` as `targets` gives them, for `archive` and
/// `ab --export-libraries`, which run as processes of their own (subcommands do not
/// call each other).
fn target_args(cmd: &mut std::process::Command, targets: &TargetArgs) {
    if let Some(manifest) = &targets.manifest_path {
        cmd.arg("--manifest-path").arg(manifest);
    }
    for p in &targets.packages {
        cmd.args(["-p", p]);
    }
    for b in &targets.benches {
        cmd.args(["--bench", b]);
    }
}

/// The archive's baselines, where the merge compares with them (as `run --archive`
/// would).
fn extract_baselines(job: &Job) -> Result<()> {
    let scratch = job.dir.join(".archive");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    let extracted = crate::archive::unpack::extract(&job.archive(), &scratch)
        .with_context(|| format!("failed to read {}", job.archive().display()))?;
    let _ = std::fs::remove_dir_all(job.baselines());
    let from = extracted.baselines_root();
    if from.is_dir() {
        std::fs::rename(&from, job.baselines()).with_context(|| {
            format!(
                "failed to keep the archive's baselines in {}",
                job.baselines().display()
            )
        })?;
    }
    std::fs::remove_dir_all(&scratch)
        .with_context(|| format!("failed to remove {}", scratch.display()))?;
    Ok(())
}

/// Writes the scripts of a new attempt over `parts`, submits the array and the
/// merge after it, and records them in `slurm.json`.
fn submit(job: &mut Job, parts: &[u32]) -> Result<()> {
    let n = job.attempts.len() + 1;
    let array = job.scripts().join(format!("array-{n}.sh"));
    let merge = job.scripts().join(format!("merge-{n}.sh"));
    crate::store::runs::write_atomic(&array, script::array_script(job, parts).as_bytes())?;
    crate::store::runs::write_atomic(&merge, script::merge_script(job).as_bytes())?;
    let array_job = scheduler::submit(&array, None)?;
    let merge_job = scheduler::submit(&merge, Some(&array_job))
        .with_context(|| format!("the array job {array_job} is submitted, its merge is not"))?;
    job.attempts.push(Attempt {
        array_job: array_job.clone(),
        merge_job: merge_job.clone(),
        parts: parts.to_vec(),
        submitted_at: now(),
    });
    job.write()?;
    console::status(format_args!(
        "submitted array job {array_job} ({} task{} of {}, one per part, --gres={}) and \
         merge job {merge_job} after it",
        parts.len(),
        crate::format::plural(parts.len()),
        job.parts,
        job.sbatch.gres
    ));
    Ok(())
}

fn say_how_to_follow(job: &Job) {
    let d = job.dir.display();
    let last = job.attempts.last().expect("just submitted");
    console::status(format_args!(
        "follow: `cargo gpubench slurm follow {d}` (exits with the gate's code), or \
         `squeue -j {},{}`; the merged run goes to {d}/merged, its summary to {d}/logs/merge.job-{}.out; \
         lost parts: `cargo gpubench slurm resubmit {d}`",
        last.array_job,
        last.merge_job,
        last.merge_job
    ));
}

/// `slurm resubmit`: the parts without a completed run, submitted again.
fn resubmit(dir: &Path, wait: bool) -> Result<Exit> {
    let mut job = Job::read(dir)?;
    let outcomes = collect::outcomes(&job);
    if let Some(active) = outcomes.iter().find(|o| o.active()) {
        return Err(UsageError(format!(
            "part {} is still {} (task {}): resubmit once the job ended (`cargo gpubench \
             slurm follow {}`)",
            active.part,
            active.state_word(),
            active.task_id(),
            dir.display()
        ))
        .into());
    }
    let lost: Vec<u32> = outcomes
        .iter()
        .filter(|o| o.lost())
        .map(|o| o.part)
        .collect();
    if lost.is_empty() {
        console::status(format_args!(
            "every part of {} left a completed run: nothing to resubmit",
            dir.display()
        ));
        return Ok(Exit::Success);
    }
    for o in outcomes.iter().filter(|o| o.lost()) {
        console::note(format_args!("{}", o.describe(&job)));
    }
    submit(&mut job, &lost)?;
    if wait {
        return follow(&job);
    }
    say_how_to_follow(&job);
    Ok(Exit::Success)
}

/// Follows the latest attempt: each task's state as it changes, then the merge's
/// output and code.
fn follow(job: &Job) -> Result<Exit> {
    let attempt = job
        .attempts
        .last()
        .context("the job file names no submission")?;
    if attempt.merge_job.is_empty() {
        return Err(UsageError(format!(
            "{} was written as a Kubernetes Job ({}): follow it with kubectl, then `cargo \
             gpubench slurm collect {}`",
            job.dir.display(),
            attempt.array_job,
            job.dir.display()
        ))
        .into());
    }
    let poll = std::env::var("GPUBENCH_SLURM_POLL_S")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(10.0);
    let result = job.result(&attempt.merge_job);
    let mut shown: BTreeMap<u32, String> = BTreeMap::new();
    let mut merge_gone_since: Option<Instant> = None;
    loop {
        let states = scheduler::task_states(&attempt.array_job);
        for &k in &attempt.parts {
            let files = job.task_files(k, &attempt.array_job);
            let line = match states.get(&k) {
                Some(s) => {
                    let mut line = s.state.clone();
                    if s.state == "PENDING" && s.reason != "None" {
                        line.push_str(&format!(" ({})", s.reason));
                    }
                    if files.began() {
                        line.push_str(&format!(
                            " on {} (CUDA_VISIBLE_DEVICES={})",
                            files.started.get("host").map_or("?", String::as_str),
                            files
                                .started
                                .get("cuda_visible_devices")
                                .map_or("?", String::as_str)
                        ));
                    }
                    line
                }
                None if !files.finished.is_empty() => "ended".to_string(),
                None if files.began() => "started".to_string(),
                None => "unknown to the scheduler".to_string(),
            };
            if shown.get(&k) != Some(&line) {
                console::status(format_args!(
                    "part {k}/{} (task {}_{k}): {line}",
                    job.parts, attempt.array_job
                ));
                shown.insert(k, line);
            }
        }
        if result.is_file() {
            break;
        }
        match scheduler::job_active(&attempt.merge_job) {
            Some(false) => {
                // The result file may still be on its way through a shared file system.
                let since = *merge_gone_since.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_secs(30) {
                    return Err(anyhow::anyhow!(
                        "the merge job {} ended without a result: see {}",
                        attempt.merge_job,
                        job.logs()
                            .join(format!("merge.job-{}.out", attempt.merge_job))
                            .display()
                    ));
                }
            }
            _ => merge_gone_since = None,
        }
        std::thread::sleep(Duration::from_secs_f64(poll));
    }
    let log = job
        .logs()
        .join(format!("merge.job-{}.out", attempt.merge_job));
    if let Ok(text) = std::fs::read_to_string(&log) {
        console::status(format_args!(
            "merge job {} ({}):",
            attempt.merge_job,
            log.display()
        ));
        eprint!("{text}");
    }
    let code = std::fs::read_to_string(&result)
        .ok()
        .and_then(|t| t.trim().parse::<u8>().ok())
        .with_context(|| {
            format!(
                "failed to read the merge's exit code from {}",
                result.display()
            )
        })?;
    Ok(exit_of_code(code))
}

/// The [`Exit`] a code stands for (an unknown one is the machine's: setup).
pub(crate) fn exit_of_code(code: u8) -> Exit {
    [
        Exit::Success,
        Exit::BenchmarkFailed,
        Exit::Usage,
        Exit::BuildFailed,
        Exit::RegressionFound,
        Exit::Setup,
        Exit::Interrupted,
    ]
    .into_iter()
    .find(|e| e.code() == code)
    .unwrap_or(Exit::Setup)
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
