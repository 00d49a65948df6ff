//! The CI templates of `.github/workflows/`, held to what they promise a user who
//! copies them: every cargo gpubench command in them parses with the real command
//! line, their GPUBENCH_* variables are options with values that parse, they install
//! cargo-gpubench at the revision of the gpubench-core in the user's Cargo.lock
//! (`revision`, which also keeps the README's pinned revision current) and set up
//! libtorch (with the CUDA headers where they build for a GPU) before building, the
//! CPU template judges pull requests with `ab` on a hosted runner, baselines go to a
//! branch of their own and never to `main` (`baselines_branch`), the matrix comes
//! from `PARTS` alone, and every `run:` script passes shellcheck. `fresh_install`
//! runs their install and gate steps in a fresh repository (ignored by default: it
//! builds from scratch, many minutes).

mod baselines_branch;
mod fresh_install;
mod revision;
mod shell;
#[path = "../support/mod.rs"]
mod support;
mod workflow;

use std::process::{Command, Stdio};

use cargo_gpubench::testing::build::setup;
use cargo_gpubench::testing::cli::{Cli, Command as Subcommand};
use clap::{CommandFactory, FromArgMatches};

use workflow::{Job, Step, Workflow};

/// GitHub's own variables a `run:` script reads, with representative values.
const RUNNER_ENV: &[(&str, &str)] = &[
    ("HOME", "/home/runner"),
    ("GITHUB_SHA", "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"),
    ("GITHUB_EVENT_NAME", "pull_request"),
    ("GITHUB_WORKSPACE", "/home/runner/work/repo/repo"),
    ("RUNNER_TEMP", "/home/runner/work/_temp"),
    (
        "GITHUB_ENV",
        "/home/runner/work/_temp/_runner_file_commands/set_env_1",
    ),
    (
        "GITHUB_OUTPUT",
        "/home/runner/work/_temp/_runner_file_commands/set_output_1",
    ),
    (
        "GITHUB_STEP_SUMMARY",
        "/home/runner/work/_temp/_runner_file_commands/step_summary_1",
    ),
];

/// GPUBENCH_* variables of the templates that are theirs, not cargo gpubench options:
/// the repository and revision cargo-gpubench is installed from, which the step
/// [`FIND_REVISION`] puts in the job's environment.
const TEMPLATE_VARIABLES: &[&str] = &["GPUBENCH_GIT", "GPUBENCH_REV"];

/// The step that reads the revision of cargo-gpubench from the gpubench-core of the
/// user's Cargo.lock, before any job installs it.
const FIND_REVISION: &str = "Find the revision of cargo-gpubench";

/// How every job installs cargo-gpubench, from what [`FIND_REVISION`] found.
const INSTALL: &str =
    r#"cargo install --locked --git "$GPUBENCH_GIT" --rev "$GPUBENCH_REV" cargo-gpubench"#;

/// A gpubench command line of a template.
#[derive(Debug)]
struct Found {
    /// `file: job / step`, for messages.
    at: String,
    /// The job's id.
    job: String,
    /// The step's place in the job.
    step: usize,
    /// The command line as written (continuations joined).
    written: String,
    /// Its argument vectors as cargo would pass them (`cargo-gpubench gpubench ...`
    /// for `cargo gpubench ...`), one for each combination of its variables' values.
    argvs: Vec<Vec<String>>,
}

/// The environment a step's script runs in: the runner's variables, then the
/// workflow's scopes.
fn script_env(wf: &Workflow, job: &Job, step: &Step) -> Result<Vec<(String, String)>, String> {
    let mut env: Vec<(String, String)> = RUNNER_ENV
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.extend(workflow::step_env(wf, job, step)?);
    Ok(env)
}

/// The words that start a gpubench command: `cargo gpubench`, or a path to the
/// `cargo-gpubench` binary. `None` for other commands.
fn gpubench_program(words: &[String]) -> Option<usize> {
    match words {
        [cargo, sub, ..] if cargo == "cargo" && sub == "gpubench" => Some(1),
        [exe, ..] if exe.rsplit('/').next() == Some("cargo-gpubench") => Some(0),
        _ => None,
    }
}

/// Every gpubench command of `wf`, or what could not be read.
fn gpubench_commands(wf: &Workflow) -> Result<Vec<Found>, Vec<String>> {
    let mut found = Vec::new();
    let mut errors = Vec::new();
    for job in &wf.jobs {
        for (i, step) in job.steps.iter().enumerate() {
            let Some(run) = &step.run else { continue };
            let at = format!("{}: {} / {}", wf.file, job.id, step.label());
            let script = script_env(wf, job, step).and_then(|env| {
                let text = workflow::expand_expressions(run, &env)?;
                Ok((shell::parse(&text)?, env))
            });
            let (script, env) = match script {
                Ok(s) => s,
                Err(e) => {
                    errors.push(format!("{at}: {e}"));
                    continue;
                }
            };
            for cmd in &script.commands {
                let Some(program_end) = gpubench_program(cmd) else {
                    continue;
                };
                let written = cmd.join(" ");
                match shell::expand(cmd, &script, &env) {
                    Ok(argvs) => found.push(Found {
                        at: at.clone(),
                        job: job.id.clone(),
                        step: i,
                        written,
                        // As cargo runs `cargo gpubench ARGS`: `cargo-gpubench gpubench
                        // ARGS`; a path to the binary passes ARGS alone.
                        argvs: argvs
                            .into_iter()
                            .map(|argv| {
                                let mut out = vec!["cargo-gpubench".to_string()];
                                if program_end == 1 {
                                    out.push("gpubench".into());
                                }
                                out.extend(argv.into_iter().skip(program_end + 1));
                                out
                            })
                            .collect(),
                    }),
                    Err(e) => errors.push(format!("{at}: `{written}`: {e}")),
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(found)
    } else {
        Err(errors)
    }
}

/// The command line's definition without its environment variables, so this test
/// process's own GPUBENCH_* variables cannot fill in what a template leaves out.
fn without_env(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| a.env(None)).mut_subcommands(without_env)
}

/// Parses a command line as `Cli::parse_from_cargo` does, with the definition of
/// [`without_env`].
fn parse_cli(argv: &[String]) -> Result<Cli, clap::Error> {
    let mut args = argv.to_vec();
    if args.get(1).is_some_and(|a| a == "gpubench") {
        args.remove(1);
    }
    let matches = without_env(Cli::command()).try_get_matches_from(args)?;
    Cli::from_arg_matches(&matches)
}

/// Parses every command of `wf`: the parsed commands, or every failure.
fn check(wf: &Workflow) -> Result<Vec<(Found, Vec<Cli>)>, Vec<String>> {
    let mut errors = Vec::new();
    let mut parsed = Vec::new();
    for found in gpubench_commands(wf)? {
        let mut clis = Vec::new();
        for argv in &found.argvs {
            match parse_cli(argv) {
                Ok(cli) => clis.push(cli),
                Err(e) => errors.push(format!(
                    "{}: `{}` (as {argv:?}) does not parse:\n{}",
                    found.at,
                    found.written,
                    e.render()
                )),
            }
        }
        parsed.push((found, clis));
    }
    errors.extend(check_variables(wf));
    if errors.is_empty() {
        Ok(parsed)
    } else {
        Err(errors)
    }
}

/// Every GPUBENCH_* variable set in `wf`'s scopes: an option's, with a value its
/// parser takes, or one of [`TEMPLATE_VARIABLES`].
fn check_variables(wf: &Workflow) -> Vec<String> {
    let scopes =
        std::iter::once(("workflow".to_string(), &wf.env)).chain(wf.jobs.iter().flat_map(|j| {
            std::iter::once((format!("job {}", j.id), &j.env)).chain(
                j.steps
                    .iter()
                    .map(move |s| (format!("{} / {}", j.id, s.label()), &s.env)),
            )
        }));
    let mut options = Vec::new();
    collect_env_options(&Cli::command(), &[], &mut options);
    let mut errors = Vec::new();
    for (scope, env) in scopes {
        for (name, value) in env.iter() {
            if !name.starts_with("GPUBENCH_") || TEMPLATE_VARIABLES.contains(&name.as_str()) {
                continue;
            }
            let reading: Vec<&EnvOption> = options.iter().filter(|o| &o.env == name).collect();
            if reading.is_empty() {
                errors.push(format!(
                    "{}: {scope}: {name} is no cargo gpubench option's variable",
                    wf.file
                ));
            }
            // Several subcommands share an option: one error is enough.
            if let Some(e) = reading.iter().find_map(|o| o.rejects(value)) {
                errors.push(format!(
                    "{}: {scope}: {name}={value} is not taken: {e}",
                    wf.file
                ));
            }
        }
    }
    errors
}

/// An option that reads an environment variable.
#[derive(Debug)]
struct EnvOption {
    /// The subcommands down to the one that has it.
    path: Vec<String>,
    id: String,
    long: String,
    env: String,
}

impl EnvOption {
    /// Why the command line does not take `value` from the variable, if it does not:
    /// the option given `value` on the command line, parsed by the command line
    /// itself (a flag reads its variable as a boolean: here it takes the value).
    fn rejects(&self, value: &str) -> Option<String> {
        fn at(cmd: clap::Command, path: &[String], o: &EnvOption) -> clap::Command {
            match path {
                [] => cmd.mut_arg(&o.id, |a| match a.get_action() {
                    clap::ArgAction::SetTrue | clap::ArgAction::SetFalse => {
                        a.action(clap::ArgAction::Set)
                    }
                    _ => a,
                }),
                [first, rest @ ..] => cmd.mut_subcommand(first, |sub| at(sub, rest, o)),
            }
        }
        let cmd = at(without_env(Cli::command()), &self.path, self);
        let argv = std::iter::once("cargo-gpubench".to_string())
            .chain(self.path.iter().cloned())
            .chain([format!("--{}={value}", self.long)]);
        match cmd.try_get_matches_from(argv) {
            Ok(_) => None,
            // What else the subcommand needs is not the variable's business.
            Err(e)
                if matches!(
                    e.kind(),
                    clap::error::ErrorKind::MissingRequiredArgument
                        | clap::error::ErrorKind::ArgumentConflict
                ) =>
            {
                None
            }
            Err(e) => Some(format!(
                "`{} --{}`: {}",
                self.path.join(" "),
                self.long,
                e.render()
            )),
        }
    }
}

fn collect_env_options(cmd: &clap::Command, path: &[String], out: &mut Vec<EnvOption>) {
    for arg in cmd.get_arguments() {
        if let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) {
            out.push(EnvOption {
                path: path.to_vec(),
                id: arg.get_id().to_string(),
                long: long.to_string(),
                env: env.to_string_lossy().into_owned(),
            });
        }
    }
    for sub in cmd.get_subcommands() {
        let mut path = path.to_vec();
        path.push(sub.get_name().to_string());
        collect_env_options(sub, &path, out);
    }
}

/// What a parsed command does, for the checks of each job.
fn subcommand(cli: &Cli) -> &'static str {
    match &cli.command {
        None => "run",
        Some(Subcommand::Run(_)) => "run",
        Some(Subcommand::Ab(_)) => "ab",
        Some(Subcommand::Archive(_)) => "archive",
        Some(Subcommand::Compare(_)) => "compare",
        Some(Subcommand::Report(_)) => "report",
        Some(Subcommand::Merge(_)) => "merge",
        Some(Subcommand::History(_)) => "history",
        Some(Subcommand::Setup(_)) => "setup",
        Some(Subcommand::Doctor(_)) => "doctor",
        Some(Subcommand::Capacity(_)) => "capacity",
        Some(Subcommand::Slurm(_)) => "slurm",
    }
}

/// Whether `cli` builds bench targets (so gpubench-core's build script compiles the
/// kernel-timing shim there).
fn builds(cli: &Cli) -> bool {
    match &cli.command {
        Some(Subcommand::Archive(_) | Subcommand::Ab(_)) => true,
        None => cli.run.prebuilt.archive.is_none() && cli.run.prebuilt.exes.is_empty(),
        Some(Subcommand::Run(args)) => {
            args.prebuilt.archive.is_none() && args.prebuilt.exes.is_empty()
        }
        Some(Subcommand::Capacity(args)) => {
            args.prebuilt.archive.is_none() && args.prebuilt.exes.is_empty()
        }
        _ => false,
    }
}

fn parsed(file: &str) -> Vec<(Found, Vec<Cli>)> {
    check(&workflow::template(file)).unwrap_or_else(|errors| panic!("{}", errors.join("\n\n")))
}

#[test]
fn every_gpubench_command_of_the_templates_parses_with_the_real_command_line() {
    let expected: &[(&str, &[&str])] = &[
        ("gpubench-cpu.yml", &["setup", "ab"]),
        (
            "gpubench-matrix.yml",
            &["setup", "archive", "setup", "run", "merge"],
        ),
        ("gpubench.yml", &["setup", "run", "ab"]),
    ];
    let templates = workflow::templates();
    let files: Vec<&str> = templates.iter().map(|w| w.file.as_str()).collect();
    assert_eq!(
        files,
        expected.iter().map(|(f, _)| *f).collect::<Vec<_>>(),
        "a template without a line here is not checked"
    );
    for (file, subcommands) in expected {
        let found = parsed(file);
        for (f, _) in &found {
            eprintln!("{}: {:?}", f.at, f.argvs);
        }
        let names: Vec<&str> = found
            .iter()
            .map(|(_, clis)| {
                let names: Vec<&str> = clis.iter().map(subcommand).collect();
                assert!(!names.is_empty());
                names[0]
            })
            .collect();
        assert_eq!(&names, subcommands, "{file}: the gpubench commands found");
    }
}

#[test]
fn the_merge_is_checked_as_a_push_and_as_a_pull_request_would_run_it() {
    let found = parsed("gpubench-matrix.yml");
    let (merge, clis) = found
        .iter()
        .find(|(_, clis)| subcommand(&clis[0]) == "merge")
        .unwrap();
    assert_eq!(clis.len(), 2, "{merge:?}");
    let saves: Vec<Option<&str>> = clis
        .iter()
        .map(|c| match &c.command {
            Some(Subcommand::Merge(args)) => args.baselines.save_baseline.as_deref(),
            _ => panic!("not a merge"),
        })
        .collect();
    assert_eq!(saves, [Some("main"), None]);
}

#[test]
fn the_pull_request_is_judged_by_ab_against_its_base_commit_with_the_history_checked_out() {
    for file in ["gpubench.yml", "gpubench-cpu.yml"] {
        let wf = workflow::template(file);
        let found = parsed(file);
        let (ab, _) = found
            .iter()
            .find(|(_, clis)| subcommand(&clis[0]) == "ab")
            .unwrap_or_else(|| panic!("{file} runs `cargo gpubench ab`"));
        let job = wf.jobs.iter().find(|j| j.id == ab.job).unwrap();
        let step = &job.steps[ab.step];
        let base = step.env.iter().find(|(k, _)| k == "GPUBENCH_AB_BASE");
        assert_eq!(
            base.map(|(_, v)| v.as_str()),
            Some("${{ github.event.pull_request.base.sha }}"),
            "{}: the base is the pull request's base commit",
            ab.at
        );
        // The base commit is only in the checkout with the history.
        let checkout = job.steps[..ab.step]
            .iter()
            .find(|s| {
                s.uses
                    .as_deref()
                    .is_some_and(|u| u.starts_with("actions/checkout@"))
            })
            .expect("the job checks out the repository before ab");
        assert!(
            checkout
                .with
                .iter()
                .any(|(k, v)| k == "fetch-depth" && v == "0"),
            "{}: the checkout has no `fetch-depth: 0`, so the base commit is not there: {:?}",
            ab.at,
            checkout.with
        );
    }
}

/// The CPU template needs nothing but GitHub: hosted runners, the CPU device, pull
/// requests judged by `ab` (paired: the runner's speed cancels), no baseline saved
/// (a hosted runner's CPU changes from job to job, so a baseline would be judged
/// against another machine), and no CUDA wheels or headers installed.
#[test]
fn the_cpu_template_gates_pull_requests_with_ab_on_a_hosted_runner() {
    let wf = workflow::template("gpubench-cpu.yml");
    let on = &wf.doc["on"];
    assert!(
        on["push"].is_badvalue() && !on["pull_request"].is_badvalue(),
        "gpubench-cpu.yml runs on pull requests only: {on:?}"
    );
    for (id, job) in wf.doc["jobs"].as_hash().unwrap() {
        assert_eq!(
            workflow::scalar(&job["runs-on"]).as_deref(),
            Some("ubuntu-latest"),
            "gpubench-cpu.yml: job {id:?} runs on a GitHub-hosted runner"
        );
    }
    let found = parsed("gpubench-cpu.yml");
    for (f, clis) in &found {
        let job = wf.jobs.iter().find(|j| j.id == f.job).unwrap();
        let device = job.env.iter().find(|(k, _)| k == "GPUBENCH_DEVICE");
        assert_eq!(device.map(|(_, v)| v.as_str()), Some("cpu"), "{}", f.at);
        for cli in clis {
            match subcommand(cli) {
                "ab" => {}
                "setup" => {
                    let Some(Subcommand::Setup(args)) = &cli.command else {
                        unreachable!("a setup")
                    };
                    assert!(args.no_cuda_headers && args.no_cargo_config, "{}", f.at);
                    // PyTorch's CPU wheels, not PyPI's 3 GB of CUDA libraries.
                    let step = &job.steps[f.step];
                    assert!(
                        step.env
                            .iter()
                            .any(|(k, v)| k == "PIP_INDEX_URL" && v == setup::CPU_WHEELS),
                        "{}: {:?}",
                        f.at,
                        step.env
                    );
                }
                other => panic!("{}: `{}` ({other}) in the CPU template", f.at, f.written),
            }
        }
    }
}

#[test]
fn the_templates_gpubench_variables_are_options_whose_values_parse() {
    for wf in workflow::templates() {
        let errors = check_variables(&wf);
        assert!(errors.is_empty(), "{}", errors.join("\n"));
    }
    // Each is seen: the job env of gpubench.yml sets two.
    let wf = workflow::template("gpubench.yml");
    let set: Vec<&str> = wf.jobs[0].env.iter().map(|(k, _)| k.as_str()).collect();
    assert!(
        set.contains(&"GPUBENCH_DEVICE") && set.contains(&"GPUBENCH_FAIL_ON"),
        "{set:?}"
    );
}

/// A template pins no revision of its own, which would drift from the user's
/// dependency: every job that calls `cargo gpubench` reads the revision from the
/// gpubench-core of Cargo.lock after the checkout, with one script in every template
/// (`revision` runs it), and installs cargo-gpubench at it.
#[test]
fn every_job_installs_cargo_gpubench_at_the_revision_of_the_gpubench_core_in_cargo_lock() {
    let mut finds = Vec::new();
    for wf in workflow::templates() {
        for name in TEMPLATE_VARIABLES {
            assert!(
                !wf.env.iter().any(|(k, _)| k == name),
                "{}: the workflow sets {name}: the revision comes from Cargo.lock",
                wf.file
            );
        }
        let found = gpubench_commands(&wf).unwrap();
        for job in &wf.jobs {
            let Some(first) = found
                .iter()
                .filter(|f| f.job == job.id && f.argvs[0].get(1).is_some_and(|a| a == "gpubench"))
                .map(|f| f.step)
                .min()
            else {
                continue;
            };
            let before = &job.steps[..first];
            let at = |what: &str, p: &dyn Fn(&workflow::Step) -> bool| {
                before.iter().position(p).unwrap_or_else(|| {
                    panic!(
                        "{}: job {} has no {what} before `cargo gpubench`",
                        wf.file, job.id
                    )
                })
            };
            let checkout = at("checkout", &|s| {
                s.uses
                    .as_deref()
                    .is_some_and(|u| u.starts_with("actions/checkout@"))
            });
            let find = at(FIND_REVISION, &|s| s.name.as_deref() == Some(FIND_REVISION));
            let install = at("install", &|s| {
                s.run
                    .as_deref()
                    .is_some_and(|r| r.contains("cargo install"))
            });
            assert!(
                checkout < find && find < install,
                "{}: job {}: checkout, {FIND_REVISION:?}, install, in that order",
                wf.file,
                job.id
            );
            assert_eq!(
                before[install].run.as_deref().map(str::trim),
                Some(INSTALL),
                "{}: job {}",
                wf.file,
                job.id
            );
            // Its outputs key the caches.
            assert_eq!(before[find].id.as_deref(), Some("gpubench"));
            finds.push((
                format!("{}: {}", wf.file, job.id),
                before[find].run.clone().unwrap(),
            ));
        }
    }
    assert_eq!(finds.len(), 3, "{finds:?}");
    for (at, script) in &finds[1..] {
        assert_eq!(
            script, &finds[0].1,
            "{at} reads the revision unlike {}",
            finds[0].0
        );
    }
    // What the step exports reaches every later step: no option may read it.
    let mut options = Vec::new();
    collect_env_options(&Cli::command(), &[], &mut options);
    for name in TEMPLATE_VARIABLES {
        assert!(
            !options.iter().any(|o| &o.env == name),
            "{name} is read by a cargo gpubench option"
        );
    }
}

/// Whether `job` measures on the CPU (`GPUBENCH_DEVICE: cpu` in its scope).
fn on_cpu(wf: &Workflow, job: &Job) -> bool {
    wf.env
        .iter()
        .chain(&job.env)
        .rev()
        .find(|(k, _)| k == "GPUBENCH_DEVICE")
        .is_some_and(|(_, v)| v == "cpu")
}

#[test]
fn every_job_sets_up_libtorch_before_it_builds_or_runs_benchmarks() {
    let mut builds_seen = 0;
    for wf in workflow::templates() {
        let found = check(&wf).unwrap_or_else(|e| panic!("{}", e.join("\n")));
        for job in &wf.jobs {
            let mut setup: Option<bool> = None;
            for (f, clis) in found.iter().filter(|(f, _)| f.job == job.id) {
                let cli = &clis[0];
                if let Some(Subcommand::Setup(args)) = &cli.command {
                    // Without the CUDA headers the kernel-timing shim is not built:
                    // only a job that measures on the CPU goes without them.
                    setup = Some(!args.no_cuda_headers || on_cpu(&wf, job));
                } else if builds(cli) {
                    builds_seen += 1;
                    assert_eq!(
                        setup,
                        Some(true),
                        "{}: `{}` builds benchmarks before `setup` installed libtorch with \
                         the CUDA headers",
                        f.at,
                        f.written
                    );
                } else if subcommand(cli) == "run" {
                    assert!(
                        setup.is_some(),
                        "{}: `{}` runs before `setup`",
                        f.at,
                        f.written
                    );
                }
            }
        }
    }
    assert!(builds_seen >= 3, "{builds_seen} building commands found");
}

#[test]
fn the_matrix_is_made_from_parts_alone() {
    let wf = workflow::template("gpubench-matrix.yml");
    let parts: u32 = wf
        .env
        .iter()
        .find(|(k, _)| k == "PARTS")
        .map(|(_, v)| v.parse().expect("PARTS is a number"))
        .expect("a workflow env PARTS");
    assert_eq!(
        workflow::scalar(&wf.doc["jobs"]["measure"]["strategy"]["matrix"]["part"]).as_deref(),
        Some("${{ fromJSON(needs.parts.outputs.list) }}")
    );
    // The measure job's partition follows PARTS.
    let found = parsed("gpubench-matrix.yml");
    let measure = found
        .iter()
        .find(|(f, clis)| f.job == "measure" && subcommand(&clis[0]) == "run")
        .unwrap();
    let argv = &measure.0.argvs[0];
    let at = argv.iter().position(|a| a == "--partition").unwrap();
    assert_eq!(argv[at + 1], format!("hash:2/{parts}"));

    // The parts job's script, run: 1..=PARTS as JSON, and a refusal of a bad count.
    let job = wf.jobs.iter().find(|j| j.id == "parts").unwrap();
    let script = job.steps[0].run.clone().unwrap();
    let run = |value: &str| {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("output");
        let ok = Command::new("bash")
            .args(["-e", "-c", &script])
            .env("PARTS", value)
            .env("GITHUB_OUTPUT", &out)
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success();
        (ok, std::fs::read_to_string(&out).unwrap_or_default())
    };
    let (ok, output) = run("3");
    assert!(ok);
    let list = output.trim().strip_prefix("list=").expect(&output);
    let list: Vec<u32> = serde_json::from_str(list).unwrap();
    assert_eq!(list, [1, 2, 3]);
    for bad in ["0", "", "two"] {
        assert!(!run(bad).0, "PARTS={bad:?} was taken");
    }
}

/// What shellcheck finds in a step's script, run as GitHub runs it (`bash -e`).
fn shellcheck(script: &str) -> Option<String> {
    use std::io::Write;
    let mut child = Command::new("shellcheck")
        .args(["--shell=bash", "--format=gcc", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "failed to run shellcheck ({e}): install it (Debian: apt-get install \
                 shellcheck; scripts/test does)"
            )
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn every_run_script_passes_shellcheck() {
    let mut scripts = 0;
    let mut findings = Vec::new();
    for wf in workflow::templates() {
        for job in &wf.jobs {
            for step in &job.steps {
                let Some(run) = &step.run else { continue };
                let env = script_env(&wf, job, step).unwrap();
                let text = workflow::expand_expressions(run, &env).unwrap();
                scripts += 1;
                if let Some(found) = shellcheck(&text) {
                    findings.push(format!(
                        "{}: {} / {}:\n{found}",
                        wf.file,
                        job.id,
                        step.label()
                    ));
                }
            }
        }
    }
    assert!(scripts >= 10, "{scripts} scripts checked");
    assert!(findings.is_empty(), "{}", findings.join("\n"));
    // And it does find what it should.
    let found = shellcheck("cp $SRC .\n").expect("an unquoted variable is a finding");
    assert!(found.contains("SC2086"), "{found}");
}

/// The checker itself: a template that drifted from the command line fails it.
#[test]
fn a_drifted_template_fails_the_checks() {
    let wf = workflow::parse(
        "drifted.yml",
        r#"
env:
  PARTS: 4
  GPUBENCH_DEVCE: cuda
  GPUBENCH_FAIL_ON: sometimes
jobs:
  j:
    steps:
      - name: unknown flag
        run: cargo gpubench --no-such-flag
      - name: bad value
        env:
          PART: ${{ matrix.part }}
        run: |
          ./cargo-gpubench run --archive a.tar.gz \
            --partition "hash:$PART/x$PARTS"
      - name: merge without runs
        run: |
          if [ "$GITHUB_EVENT_NAME" = push ]; then save=(--save-baseline main); else save=(--fail-on nothing); fi
          ./cargo-gpubench merge --out-dir m "${save[@]}"
      - name: not a command
        run: echo "cargo gpubench --bogus" && command -v cargo-gpubench
"#,
    )
    .unwrap();
    let errors = check(&wf).unwrap_err();
    let has = |needle: &str| errors.iter().any(|e| e.contains(needle));
    assert!(has("j / unknown flag"), "{errors:#?}");
    assert!(has("--no-such-flag"), "{errors:#?}");
    assert!(has("hash:2/x4"), "{errors:#?}");
    // Both branches of the merge are wrong: no runs, and a --fail-on value that is none.
    assert_eq!(
        errors
            .iter()
            .filter(|e| e.contains("j / merge without runs"))
            .count(),
        2
    );
    assert!(
        has("GPUBENCH_DEVCE is no cargo gpubench option"),
        "{errors:#?}"
    );
    assert!(has("GPUBENCH_FAIL_ON=sometimes"), "{errors:#?}");
    assert!(
        !has("--bogus"),
        "an echo was read as a command: {errors:#?}"
    );
    assert_eq!(errors.len(), 6, "{errors:#?}");

    // A variable the checks cannot know is an error, not an empty word.
    let wf = workflow::parse(
        "unknown.yml",
        "jobs:\n  j:\n    steps:\n      - run: cargo gpubench --baseline \"$WHO\"\n",
    )
    .unwrap();
    let errors = check(&wf).unwrap_err();
    assert!(errors[0].contains("$WHO"), "{errors:?}");

    // And the same workflow with the commands fixed passes.
    let wf = workflow::parse(
        "fixed.yml",
        "env:\n  GPUBENCH_FAIL_ON: never\njobs:\n  j:\n    steps:\n      - run: |\n          \
         cargo gpubench setup\n          cargo gpubench --baseline main \\\n            \
         --summary-file \"$GITHUB_STEP_SUMMARY\"\n",
    )
    .unwrap();
    let found = check(&wf).unwrap();
    assert_eq!(found.len(), 2);
}

/// `scripts/demo`, which a newcomer runs first: its build is not silenced (the first
/// one takes minutes, and a build without cargo's progress looks hung), and what it
/// hands cargo gpubench parses with the real command line.
#[test]
fn the_demo_shows_cargos_build_progress_and_runs_a_valid_command() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let demo = std::fs::read_to_string(root.join("scripts/demo")).unwrap();
    let script = shell::parse(&demo).unwrap();
    let cargo: Vec<&shell::Command> = script
        .commands
        .iter()
        .filter(|c| c.first().is_some_and(|w| w == "cargo"))
        .collect();
    assert_eq!(cargo.len(), 1, "{cargo:?}");
    let words = cargo[0];
    let split = words
        .iter()
        .position(|w| w == "--")
        .expect("cargo run -- ...");
    let (cargo_part, gpubench) = (&words[..split], &words[split + 1..]);
    assert!(
        !cargo_part.iter().any(|w| w == "--quiet" || w == "-q"),
        "cargo's progress is silenced: {words:?}"
    );
    assert!(
        cargo_part.iter().any(|w| w == "cargo-gpubench"),
        "{words:?}"
    );
    let mut argv = vec!["cargo-gpubench".to_string()];
    argv.extend(gpubench.iter().filter(|w| *w != "\"$@\"").cloned());
    parse_cli(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
}

/// The first setup, the slow step of a first run and of a CI job on an empty cache,
/// says what it downloads, how much, and what the first build will take after it;
/// with PyTorch's CPU index (the CPU template's), that it takes the CPU wheel.
#[test]
fn the_first_setup_says_what_it_downloads_and_what_the_first_build_takes() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    // A stand-in python: `-m venv DIR` makes a pip that lays out a torch package.
    let python = tmp.path().join("python3");
    std::fs::write(
        &python,
        "#!/bin/sh\n[ \"$1 $2\" = \"-m venv\" ] || exit 9\nmkdir -p \"$3/bin\"\n\
         cat > \"$3/bin/pip\" <<EOF\n#!/bin/sh\n\
         mkdir -p \"$3/lib/python3.12/site-packages/torch/lib\"\n\
         : > \"$3/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so\"\nEOF\n\
         chmod +x \"$3/bin/pip\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let setup = |venv: &str, index: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-gpubench"));
        cmd.args(["gpubench", "setup", "--no-cargo-config", "--venv"])
            .arg(tmp.path().join(venv))
            .arg("--python")
            .arg(&python)
            .env_remove("PIP_INDEX_URL");
        if let Some(index) = index {
            cmd.env("PIP_INDEX_URL", index);
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        stderr
    };
    let said = setup("gpu", None);
    for needle in [
        "about 2.5 GB to download and 5 GB on disk, once per machine",
        setup::CPU_WHEELS,
        "The first build compiles tch's C++ bindings (torch-sys) against it: several minutes",
    ] {
        assert!(said.contains(needle), "{needle:?} not in:\n{said}");
    }
    let said = setup("cpu", Some(setup::CPU_WHEELS));
    assert!(
        said.contains("CPU-only torch wheel") && !said.contains("2.5 GB"),
        "{said}"
    );
    // Set up already: nothing to download, nothing said about it.
    let again = setup("cpu", Some(setup::CPU_WHEELS));
    assert!(
        again.contains("already set up") && !again.contains("wheel"),
        "{again}"
    );
}
