//! The templates' steps, run as written in a fresh repository whose benchmarks
//! depend on gpubench-core by git, as the README says, on a bare clone of this
//! repository at HEAD: the revision read from its Cargo.lock, cargo-gpubench
//! installed from there into an empty cargo home, libtorch set up in an empty cache,
//! and then
//!
//! * the matrix template's build job: a new workspace with one `#[gpu_bench]`
//!   archived. The bench executable in the archive must embed the CUDA shim, which
//!   gpubench-core's build script compiles only when it finds the CUDA headers `cargo
//!   gpubench setup` installs: without it a run has no kernel time;
//! * the CPU template's job on a pull request that makes a benchmark four times
//!   slower: `ab` judges it regressed on the CPU, the summary says so and the job
//!   fails with exit code 4.
//!
//! They build cargo-gpubench, tch and gpubench-core from scratch (many minutes on a
//! small machine), so they are ignored in the default test run; `.ci/run` runs them.
//!
//! The setup cache is laid out as actions/cache restores it on a runner that set up
//! before: the project's virtual environment (`scripts/env.sh` installs the same
//! wheels as `setup`) behind the layout `setup` writes, so no 5 GB are downloaded
//! again; `cargo gpubench setup` then finds it installed, and what follows finds
//! libtorch there with no variable set.

use std::cell::RefCell;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cargo_gpubench::testing::build::libtorch::LIBTORCH_VERSION;
use cargo_gpubench::testing::build::setup;

use crate::workflow::{self, Step};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-gpubench is inside the workspace")
        .to_path_buf()
}

/// The venv `scripts/env.sh` installed torch and the CUDA headers into.
fn project_venv() -> PathBuf {
    let venv = crate::support::project_venv();
    let marker = venv.join(format!(".gpubench-torch-{LIBTORCH_VERSION}-crt"));
    assert!(
        marker.is_file(),
        "{} is missing: run `source scripts/env.sh` once (it installs torch {LIBTORCH_VERSION} \
         and the CUDA headers into {})",
        marker.display(),
        venv.display()
    );
    venv
}

/// `git ARGS` in `dir`, which must succeed: its trimmed stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A step of a template's job, by name.
fn step<'a>(job: &'a workflow::Job, name: &str) -> &'a Step {
    job.steps
        .iter()
        .find(|s| s.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("job {} has no step {name:?}", job.id))
}

/// A runner's environment: this machine's, less what the project's scripts and
/// cargo's test runner set, with an empty cargo home and gpubench cache; the job's
/// variables, and what its steps add to them through GITHUB_ENV.
struct Runner {
    cargo_home: PathBuf,
    cache: PathBuf,
    path: OsString,
    vars: RefCell<Vec<(String, String)>>,
    /// Where GITHUB_ENV, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY are written.
    files: PathBuf,
    /// The values of the expressions the steps' `env` holds.
    expressions: Vec<(String, String)>,
}

impl Runner {
    /// A fresh runner in `tmp` for `job` of `wf`.
    fn new(tmp: &Path, cache: PathBuf, wf: &workflow::Workflow, job: &workflow::Job) -> Runner {
        let cargo_home = tmp.join("cargo-home");
        let path = std::env::join_paths(std::iter::once(cargo_home.join("bin")).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).filter(|p| {
                !p.join("activate").is_file() && !p.to_string_lossy().contains("/.venv/")
            }),
        ))
        .unwrap();
        let files = tmp.join("runner-files");
        std::fs::create_dir_all(&files).unwrap();
        Runner {
            cargo_home,
            cache,
            path,
            vars: RefCell::new(wf.env.iter().chain(&job.env).cloned().collect()),
            files,
            expressions: Vec::new(),
        }
    }

    /// `text` with each `${{ expr }}` replaced by its value in [`Self::expressions`].
    fn resolve(&self, text: &str) -> String {
        let mut out = text.to_string();
        while let Some(start) = out.find("${{") {
            let end = start + out[start..].find("}}").expect("a closed expression");
            let expr = out[start + 3..end].trim().to_string();
            let value = self
                .expressions
                .iter()
                .find(|(e, _)| *e == expr)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("no value for `${{{{ {expr} }}}}` in this test"));
            out.replace_range(start..end + 2, &value);
        }
        out
    }

    fn command(&self, dir: &Path, script: &str) -> Command {
        let mut cmd = Command::new("bash");
        // As GitHub runs a `run:` step on Linux.
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(dir);
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy().into_owned();
            if key.starts_with("GPUBENCH_")
                || key.starts_with("LIBTORCH")
                || key.starts_with("CARGO")
                || ["LD_LIBRARY_PATH", "CUDA_HOME", "VIRTUAL_ENV", "PYTHONPATH"]
                    .contains(&key.as_str())
            {
                cmd.env_remove(key);
            }
        }
        cmd.env("CARGO_HOME", &self.cargo_home)
            .env("GPUBENCH_CACHE_DIR", &self.cache)
            .env("PATH", &self.path);
        for (k, v) in self.vars.borrow().iter() {
            cmd.env(k, self.resolve(v));
        }
        for file in ["GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"] {
            cmd.env(file, self.files.join(file));
        }
        cmd
    }

    /// Runs `step` of a template in `dir`; its output.
    fn run(&self, dir: &Path, step: &Step) -> String {
        let (ok, text) = self.try_run(dir, step);
        assert!(ok, "step {:?} failed:\n{text}", step.label());
        text
    }

    /// Runs `step` of a template in `dir` as GitHub does: with its `env`, a fresh
    /// GITHUB_OUTPUT, and what it writes to GITHUB_ENV kept for the next steps.
    /// Whether it succeeded, and its output (with GITHUB_OUTPUT's lines).
    fn try_run(&self, dir: &Path, step: &Step) -> (bool, String) {
        let started = Instant::now();
        let script = step.run.as_deref().expect("a run step");
        for file in ["GITHUB_ENV", "GITHUB_OUTPUT"] {
            std::fs::write(self.files.join(file), "").unwrap();
        }
        let mut cmd = self.command(dir, script);
        for (k, v) in &step.env {
            cmd.env(k, self.resolve(v));
        }
        let out = cmd.output().expect("bash runs");
        let exported = std::fs::read_to_string(self.files.join("GITHUB_ENV")).unwrap();
        for line in exported.lines() {
            let (k, v) = line.split_once('=').expect("NAME=value in GITHUB_ENV");
            self.vars.borrow_mut().push((k.to_string(), v.to_string()));
        }
        let outputs = std::fs::read_to_string(self.files.join("GITHUB_OUTPUT")).unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "step {:?}: {:.0} s ({})",
            step.label(),
            started.elapsed().as_secs_f64(),
            out.status
        );
        (
            out.status.success(),
            format!("{text}\n{}{outputs}", "GITHUB_OUTPUT:\n"),
        )
    }

    /// What the last step wrote to GITHUB_OUTPUT as `name`.
    fn output(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.files.join("GITHUB_OUTPUT"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")).map(str::to_string))
    }
}

/// The dynamic symbols of the shared object embedded in `exe` that exports
/// `gpubench_cuda_shim_version`, when there is one.
fn embedded_cuda_shim(exe: &[u8]) -> Option<Vec<String>> {
    use goblin::elf::{header::ET_DYN, Elf};
    Elf::parse(exe).expect("the bench executable is an ELF file");
    let starts = exe
        .windows(4)
        .enumerate()
        .skip(1)
        .filter(|(_, w)| *w == b"\x7fELF")
        .map(|(i, _)| i);
    for start in starts {
        let Ok(inner) = Elf::parse(&exe[start..]) else {
            continue;
        };
        if inner.header.e_type != ET_DYN {
            continue;
        }
        let names: Vec<String> = inner
            .dynsyms
            .iter()
            .filter_map(|s| inner.dynstrtab.get_at(s.st_name))
            .map(str::to_string)
            .collect();
        if names.iter().any(|n| n == "gpubench_cuda_shim_version") {
            return Some(names);
        }
    }
    None
}

#[test]
fn a_shared_object_embedded_in_an_executable_is_found_by_its_symbols() {
    let tmp = tempfile::tempdir().unwrap();
    let so = |name: &str, symbol: &str| {
        let c = tmp.path().join(format!("{name}.c"));
        std::fs::write(&c, format!("int {symbol}(void) {{ return 1; }}\n")).unwrap();
        let out = tmp.path().join(format!("{name}.so"));
        let ok = Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&out)
            .arg(&c)
            .status()
            .expect("a C compiler (cc) runs")
            .success();
        assert!(ok);
        std::fs::read(out).unwrap()
    };
    // This test's own executable stands for a bench executable, with a shared object
    // appended as include_bytes! would put it in.
    let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    assert_eq!(embedded_cuda_shim(&exe), None);
    let with = |inner: &[u8]| [exe.as_slice(), inner].concat();
    let shim = embedded_cuda_shim(&with(&so("shim", "gpubench_cuda_shim_version")));
    assert!(shim.is_some_and(|s| s.iter().any(|n| n == "gpubench_cuda_shim_version")));
    assert_eq!(
        embedded_cuda_shim(&with(&so("other", "something_else"))),
        None
    );
}

/// The repository as a user's runner fetches it, at the commit under test: a bare
/// clone in `tmp`, its `file://` URL and HEAD.
fn bare_clone(tmp: &Path) -> (String, String) {
    let repo = repo_root();
    let head = git(&repo, &["rev-parse", "HEAD"]);
    if !git(&repo, &["status", "--porcelain", "--untracked-files=no"]).is_empty() {
        eprintln!(
            "note: the checkout has uncommitted changes; this installs HEAD ({head}) without them"
        );
    }
    let clone = tmp.join("cargo-gpubench.git");
    git(
        &repo,
        &["clone", "--bare", "--quiet", ".", clone.to_str().unwrap()],
    );
    (format!("file://{}", clone.display()), head)
}

/// The setup cache in `tmp` as actions/cache restores it.
fn restored_cache(tmp: &Path) -> PathBuf {
    let cache = tmp.join("cache");
    let venv = cache.join(format!("torch-{LIBTORCH_VERSION}"));
    std::fs::create_dir_all(&venv).unwrap();
    std::os::unix::fs::symlink(project_venv().join("lib"), venv.join("lib")).unwrap();
    std::fs::write(
        venv.join(".installed"),
        format!("torch=={LIBTORCH_VERSION}\n"),
    )
    .unwrap();
    assert!(setup::is_installed(&venv), "the layout is not setup's");
    cache
}

/// A user's workspace at `ws` with one benchmark `add` whose routine is `routine`
/// (of a tensor `x`), depending on gpubench-core as the README says: by git, at a
/// revision. No Cargo.lock: the templates make it.
fn user_workspace(ws: &Path, url: &str, rev: &str, routine: &str) {
    std::fs::create_dir_all(ws.join("benches")).unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "").unwrap();
    std::fs::write(ws.join(".gitignore"), "/target\n/Cargo.lock\n").unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        format!(
            "[package]\nname = \"my-kernels\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [workspace]\n\n[lib]\nbench = false\n\n[dev-dependencies]\n\
             gpubench-core = {{ git = \"{url}\", rev = \"{rev}\" }}\ntch = \"=0.24.0\"\n\n\
             [[bench]]\nname = \"kernels\"\nharness = false\n"
        ),
    )
    .unwrap();
    std::fs::write(
        ws.join("benches/kernels.rs"),
        format!(
            "use gpubench_core::{{gpu_bench, Bencher}};\nuse tch::{{Kind, Tensor}};\n\n\
             #[gpu_bench]\nfn add(b: &mut Bencher) {{\n    \
             let x = Tensor::ones([1 << 16], (Kind::Float, b.device()));\n    \
             b.iter(|| {routine});\n}}\n\ngpubench_core::main!();\n"
        ),
    )
    .unwrap();
}

/// The find, install and set-up steps of `job`, run as written: what the find step
/// found is the clone at `head`, and a second install installs nothing.
fn install(runner: &Runner, ws: &Path, job: &workflow::Job, url: &str, head: &str, set_up: &str) {
    let found = runner.run(ws, step(job, crate::FIND_REVISION));
    assert_eq!(runner.output("rev").as_deref(), Some(head), "{found}");
    let vars = runner.vars.borrow().clone();
    for (k, v) in [("GPUBENCH_GIT", url), ("GPUBENCH_REV", head)] {
        assert!(vars.contains(&(k.into(), v.into())), "{k}: {vars:?}");
    }
    let install = step(job, "Install cargo-gpubench");
    runner.run(ws, install);
    // A runner that has it already (a self-hosted one, or restored from the cache)
    // installs nothing again.
    let again = runner.run(ws, install);
    assert!(again.contains("is already installed"), "{again}");
    let said = runner.run(ws, step(job, set_up));
    assert!(said.contains("already set up"), "{said}");
}

#[test]
#[ignore = "many minutes: builds cargo-gpubench, tch and gpubench-core from scratch; .ci/run runs it"]
fn the_templates_install_steps_build_benchmarks_with_kernel_timing_in_a_fresh_directory() {
    let started = Instant::now();
    let matrix = workflow::template("gpubench-matrix.yml");
    let single = workflow::template("gpubench.yml");
    let build = matrix.jobs.iter().find(|j| j.id == "build").unwrap();
    let bench = single.jobs.iter().find(|j| j.id == "bench").unwrap();
    const SET_UP: &str = "Set up libtorch and the CUDA headers";
    // gpubench.yml installs and sets up with the same steps: this covers both.
    for name in [crate::FIND_REVISION, "Install cargo-gpubench", SET_UP] {
        assert_eq!(step(bench, name).run, step(build, name).run, "{name}");
    }

    let tmp = tempfile::Builder::new()
        .prefix("gpubench-fresh-")
        .tempdir()
        .unwrap();
    let (url, head) = bare_clone(tmp.path());
    let runner = Runner::new(tmp.path(), restored_cache(tmp.path()), &matrix, build);
    let ws = tmp.path().join("my-kernels");
    user_workspace(&ws, &url, &head, "&x + 1.0");

    install(&runner, &ws, build, &url, &head, SET_UP);
    runner.run(&ws, step(build, "Build and archive the benchmarks"));

    // The archive the GPU jobs get, and the binary beside it.
    assert!(
        ws.join("cargo-gpubench").is_file(),
        "the build step copies cargo-gpubench"
    );
    let out = tmp.path().join("extracted");
    std::fs::create_dir_all(&out).unwrap();
    let extracted =
        cargo_gpubench::testing::archive::unpack::extract(&ws.join("benches.tar.gz"), &out)
            .unwrap();
    let m = &extracted.manifest;
    assert!(
        m.libtorch_version
            .as_deref()
            .is_some_and(|v| v.starts_with(LIBTORCH_VERSION)),
        "{m:?}"
    );
    assert_eq!(m.executables.len(), 1, "{m:?}");
    let exe = &m.executables[0];
    let ids: Vec<&str> = exe.benchmarks.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(
        (exe.package.as_str(), exe.target.as_str(), ids),
        ("my-kernels", "kernels", vec!["add"]),
        "{m:?}"
    );
    let bytes = std::fs::read(extracted.path_of(&exe.file)).unwrap();
    let symbols = embedded_cuda_shim(&bytes).unwrap_or_else(|| {
        panic!(
            "{} embeds no CUDA shim: gpubench-core was built without kernel timing",
            exe.file
        )
    });
    for entry in ["gpubench_capture_replay", "gpubench_profile_start"] {
        assert!(symbols.iter().any(|s| s == entry), "{symbols:?}");
    }
    let missing = b"kernel timing was not built in";
    assert!(
        !bytes.windows(missing.len()).any(|w| w == missing),
        "the executable carries the message of a build without the shim"
    );
    eprintln!(
        "the templates' install steps, fresh: {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
#[ignore = "many minutes: builds cargo-gpubench, tch and gpubench-core from scratch; .ci/run runs it"]
fn the_cpu_templates_steps_fail_a_pull_request_that_slows_a_benchmark_in_a_fresh_repository() {
    let started = Instant::now();
    let wf = workflow::template("gpubench-cpu.yml");
    let job = &wf.jobs[0];
    let tmp = tempfile::Builder::new()
        .prefix("gpubench-fresh-cpu-")
        .tempdir()
        .unwrap();
    let (url, head) = bare_clone(tmp.path());
    let mut runner = Runner::new(tmp.path(), restored_cache(tmp.path()), &wf, job);

    // The pull request: its base adds once, its head four times.
    let ws = tmp.path().join("my-kernels");
    user_workspace(&ws, &url, &head, "&x + 1.0");
    git(&ws, &["init", "-q", "-b", "main"]);
    let commit = |message: &str| {
        git(&ws, &["add", "-A"]);
        git(
            &ws,
            &[
                "-c",
                "user.name=u",
                "-c",
                "user.email=u@example.com",
                "commit",
                "-q",
                "-m",
                message,
            ],
        );
        git(&ws, &["rev-parse", "HEAD"])
    };
    let base = commit("base");
    user_workspace(&ws, &url, &head, "((&x + 1.0) + 1.0) + ((&x + 1.0) + 1.0)");
    commit("head: four adds");
    runner.expressions = vec![
        ("github.event.pull_request.base.sha".into(), base),
        ("steps.gpubench.outputs.rev".into(), head.clone()),
    ];

    install(&runner, &ws, job, &url, &head, "Set up libtorch");
    let measure = step(job, "Measure the pull request against its base");
    let (ok, log) = runner.try_run(&ws, measure);
    // The step keeps the exit code for the last one.
    assert!(ok, "{log}");
    let exit = runner
        .output("exit")
        .unwrap_or_else(|| panic!("no exit output: {log}"));
    assert_eq!(exit, "4", "ab's exit code is 4 (regression found):\n{log}");
    // What the job's log shows, for the figures the guide quotes.
    eprintln!("{log}");
    let summary = std::fs::read_to_string(ws.join("gpubench-summary.md")).unwrap();
    assert!(
        summary.contains("add") && summary.contains("regressed"),
        "{summary}"
    );
    let step_summary = std::fs::read_to_string(runner.files.join("GITHUB_STEP_SUMMARY")).unwrap();
    assert!(step_summary.contains(&summary));
    assert!(
        ws.join("target/gpubench/report/index.html").is_file(),
        "no report for the artifact step"
    );

    runner
        .expressions
        .push(("steps.bench.outputs.exit".into(), exit));
    let (ok, log) = runner.try_run(&ws, step(job, "Fail on a regression or a failed benchmark"));
    assert!(!ok && log.contains("exited with 4"), "{log}");
    eprintln!(
        "the CPU template's steps, fresh: {:.0} s",
        started.elapsed().as_secs_f64()
    );
}
