//! Where the GPU templates keep their baselines: the branch `gpubench-baselines`,
//! never `main` (which branch protection keeps from pushes). Their steps run here as
//! written against an `origin` whose `main` refuses every push, as a protected one
//! does: the first push to main makes the branch, the next adds a commit, an
//! unchanged baseline adds none, a pull request's job finds the baseline there, and
//! `cargo gpubench history` reads the record from that branch.

use std::path::{Path, PathBuf};
use std::process::Command;

use gpubench_analysis::BaselineEntry;
use gpubench_record::measurement::MeasurementConfig;
use gpubench_record::testing::{sample, RecordBuilder};

use crate::fresh_install::git;
use crate::workflow::{self, Step, Workflow};
use crate::{gpubench_commands, script_env};

/// The step that checks the branch out as a worktree, and the one that commits to it.
const CHECK_OUT: &str = "Check out the baselines";
const COMMIT: &str = "Commit the baseline";

/// Where the templates' worktree of the branch is, under the runner's temporary
/// directory.
const WORKTREE: &str = "gpubench-baselines";

/// The GPU templates: the ones that save baselines.
const SAVING: &[&str] = &["gpubench.yml", "gpubench-matrix.yml"];

fn step<'a>(wf: &'a Workflow, name: &str) -> (&'a workflow::Job, &'a Step) {
    wf.jobs
        .iter()
        .find_map(|j| {
            j.steps
                .iter()
                .find(|s| s.name.as_deref() == Some(name))
                .map(|s| (j, s))
        })
        .unwrap_or_else(|| panic!("{}: no step {name:?}", wf.file))
}

#[test]
fn baselines_are_saved_to_and_read_from_their_branch_and_nothing_pushes_to_main() {
    let mut scripts: Vec<(String, String, String)> = Vec::new();
    for file in SAVING {
        let wf = workflow::template(file);
        let branch = wf.env.iter().find(|(k, _)| k == "BASELINES_BRANCH");
        assert_eq!(
            branch.map(|(_, v)| v.as_str()),
            Some("gpubench-baselines"),
            "{file}: workflow env BASELINES_BRANCH"
        );
        let (job, check_out) = step(&wf, CHECK_OUT);
        let (commit_job, commit) = step(&wf, COMMIT);
        assert_eq!(job.id, commit_job.id, "{file}");
        let position = |s: &Step| job.steps.iter().position(|x| std::ptr::eq(x, s)).unwrap();
        // Every gpubench command of that job reads and writes baselines in the
        // worktree, which is checked out before it.
        let worktree_dir = format!(
            "{}/{WORKTREE}/gpubench/baselines",
            crate::RUNNER_ENV
                .iter()
                .find(|(k, _)| *k == "RUNNER_TEMP")
                .unwrap()
                .1
        );
        let mut saves = 0;
        for found in gpubench_commands(&wf).unwrap() {
            let has = |flag: &str| found.argvs.iter().any(|a| a.iter().any(|w| w == flag));
            let saving = has("--save-baseline");
            if !saving && !has("--baselines-dir") {
                continue;
            }
            saves += usize::from(saving);
            assert_eq!(found.job, job.id, "{}: saves outside the job", found.at);
            assert!(
                position(check_out) < found.step && found.step < position(commit),
                "{}: between {CHECK_OUT:?} and {COMMIT:?}",
                found.at
            );
            for argv in &found.argvs {
                let at = argv.iter().position(|w| w == "--baselines-dir");
                assert_eq!(
                    at.map(|i| argv[i + 1].as_str()),
                    Some(worktree_dir.as_str()),
                    "{}: {argv:?}",
                    found.at
                );
            }
        }
        assert!(saves >= 1, "{file}: nothing saves the baseline");
        scripts.push((
            file.to_string(),
            check_out.run.clone().unwrap(),
            commit.run.clone().unwrap(),
        ));
        // No script pushes anywhere but to the branch.
        for job in &wf.jobs {
            for s in &job.steps {
                let Some(run) = &s.run else { continue };
                for line in run.lines().filter(|l| l.contains("git push")) {
                    assert!(
                        line.contains(r#"git push origin "HEAD:refs/heads/$BASELINES_BRANCH""#),
                        "{file}: {} / {}: {line}",
                        job.id,
                        s.label()
                    );
                }
                assert!(!run.contains("HEAD:main"), "{file}: {}", s.label());
            }
        }
    }
    // One way to do it, in both.
    assert_eq!(
        scripts[0].1, scripts[1].1,
        "the templates check out unalike"
    );
    assert_eq!(scripts[0].2, scripts[1].2, "the templates commit unalike");
}

/// A job on a fresh runner: a clone of `origin` at `main`, and its temporary
/// directory.
struct Job {
    checkout: PathBuf,
    temp: PathBuf,
    sha: String,
}

impl Job {
    fn new(root: &Path, origin: &Path, n: usize) -> Job {
        let checkout = root.join(format!("job-{n}/work"));
        let temp = root.join(format!("job-{n}/_temp"));
        std::fs::create_dir_all(&temp).unwrap();
        git(
            root,
            &[
                "clone",
                "-q",
                origin.to_str().unwrap(),
                checkout.to_str().unwrap(),
            ],
        );
        let sha = git(&checkout, &["rev-parse", "HEAD"]);
        Job {
            checkout,
            temp,
            sha,
        }
    }

    /// Runs the step `name` of `wf` as the runner would: its output, and whether it
    /// succeeded.
    fn run(&self, wf: &Workflow, name: &str) -> (bool, String) {
        let (job, step) = step(wf, name);
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
            .arg(step.run.as_deref().unwrap())
            .current_dir(&self.checkout);
        for (k, v) in script_env(wf, job, step).unwrap() {
            if !["HOME"].contains(&k.as_str()) {
                cmd.env(k, v);
            }
        }
        cmd.env("RUNNER_TEMP", &self.temp)
            .env("GITHUB_SHA", &self.sha)
            .env("GITHUB_EVENT_NAME", "push")
            // No user's or system's git configuration: the step sets what it needs.
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1");
        let out = cmd.output().expect("bash runs");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// The baselines directory of the worktree the check-out step made.
    fn baselines(&self) -> PathBuf {
        self.temp.join(WORKTREE).join("gpubench/baselines/main")
    }

    /// Saves `add` at `ns` per call into the worktree, as a run with
    /// --save-baseline main --baselines-dir there writes it.
    fn save(&self, ns: f64) {
        let record = RecordBuilder::passed("add")
            .config(MeasurementConfig::quick())
            .samples((0..10).map(|i| sample(100, 100.0 * ns + f64::from(i), 100.0 * ns, None)))
            .build();
        let entry = BaselineEntry::from_record(&record).unwrap();
        std::fs::create_dir_all(self.baselines()).unwrap();
        std::fs::write(self.baselines().join("add.json"), entry.to_json_pretty()).unwrap();
    }
}

#[test]
fn pushes_to_main_commit_baselines_to_their_branch_which_history_reads() {
    let wf = workflow::template("gpubench.yml");
    let matrix = workflow::template("gpubench-matrix.yml");
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();

    // origin: a repository whose main refuses pushes, as a protected branch does.
    let origin = root.join("origin.git");
    let seed = root.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    git(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("lib.rs"), "").unwrap();
    git(&seed, &["add", "lib.rs"]);
    git(
        &seed,
        &[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@example.com",
            "commit",
            "-q",
            "-m",
            "code",
        ],
    );
    git(
        root,
        &["clone", "-q", "--bare", "seed", origin.to_str().unwrap()],
    );
    let hook = origin.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\nwhile read old new ref; do\n  if [ \"$ref\" = refs/heads/main ]; then\n    \
         echo \"main is protected\" >&2; exit 1\n  fi\ndone\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let main_before = git(&origin, &["rev-parse", "refs/heads/main"]);
    let branch_log = || {
        git(
            &origin,
            &["log", "--format=%s", "refs/heads/gpubench-baselines"],
        )
    };

    // The first push to main: no branch yet; it is made with the baseline alone.
    let first = Job::new(root, &origin, 1);
    let (ok, log) = first.run(&wf, CHECK_OUT);
    assert!(ok, "{log}");
    assert!(
        log.contains("no branch gpubench-baselines at origin yet"),
        "{log}"
    );
    assert!(
        !first.temp.join(WORKTREE).join("lib.rs").exists(),
        "the new branch holds main's files"
    );
    first.save(1000.0);
    let (ok, log) = first.run(&wf, COMMIT);
    assert!(ok, "{log}");
    assert_eq!(
        branch_log(),
        format!("gpubench: baseline main of {}", first.sha)
    );
    let files = git(
        &origin,
        &[
            "ls-tree",
            "-r",
            "--name-only",
            "refs/heads/gpubench-baselines",
        ],
    );
    assert_eq!(files, "gpubench/baselines/main/add.json");

    // The next: the branch is checked out with the baseline, which a pull request's
    // merge job (the matrix template's same step) finds too.
    let second = Job::new(root, &origin, 2);
    let (ok, log) = second.run(&matrix, CHECK_OUT);
    assert!(ok, "{log}");
    let saved = std::fs::read_to_string(second.baselines().join("add.json")).unwrap();
    assert!(BaselineEntry::from_json(&saved, "add.json").is_ok());
    second.save(1100.0);
    let (ok, log) = second.run(&matrix, COMMIT);
    assert!(ok, "{log}");
    assert_eq!(branch_log().lines().count(), 2, "{}", branch_log());

    // An unchanged baseline: no commit.
    let third = Job::new(root, &origin, 3);
    assert!(third.run(&wf, CHECK_OUT).0);
    third.save(1100.0);
    let (ok, log) = third.run(&wf, COMMIT);
    assert!(ok && log.contains("the baseline did not change"), "{log}");
    assert_eq!(branch_log().lines().count(), 2);

    // main is as it was: nothing was pushed to it.
    assert_eq!(git(&origin, &["rev-parse", "refs/heads/main"]), main_before);

    // The performance record, from the branch.
    let reader = Job::new(root, &origin, 4);
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-gpubench"))
        .args([
            "gpubench",
            "history",
            "--rev",
            "origin/gpubench-baselines",
            "--format",
            "json",
            "--no-report",
        ])
        .current_dir(&reader.checkout)
        .env_remove("GPUBENCH_BASELINES_DIR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let history: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let subjects: Vec<&str> = history["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        [
            format!("gpubench: baseline main of {}", first.sha),
            format!("gpubench: baseline main of {}", second.sha)
        ]
    );
    assert_eq!(history["benchmarks"][0]["id"], "add");

    // An origin that cannot be asked is an error, not an empty branch.
    let lost = Job::new(root, &origin, 5);
    git(
        &lost.checkout,
        &["remote", "set-url", "origin", "/nonexistent/origin.git"],
    );
    let (ok, log) = lost.run(&wf, CHECK_OUT);
    assert!(!ok, "{log}");
    assert!(
        log.contains("::error::failed to ask origin for the branch gpubench-baselines"),
        "{log}"
    );
}
