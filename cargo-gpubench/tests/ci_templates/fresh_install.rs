//! The templates' install steps, run as written in a fresh directory: cargo-gpubench
//! installed from a git clone of this repository at HEAD into an empty cargo home,
//! libtorch set up in an empty cache, and a new workspace with one `#[gpu_bench]`
//! archived as the matrix template's build job does. The bench executable in the
//! archive must embed the CUDA shim, which gpubench-core's build script compiles only
//! when it finds the CUDA headers `cargo gpubench setup` installs: without it a run
//! has no kernel time.
//!
//! It builds cargo-gpubench, tch and gpubench-core from scratch (many minutes on a
//! small machine), so it is ignored in the default test run; `.ci/run` runs it.
//!
//! The setup cache is laid out as actions/cache restores it on a runner that set up
//! before: the project's virtual environment (`scripts/env.sh` installs the same
//! wheels as `setup`) behind the layout `setup` writes, so no 5 GB are downloaded
//! again; `cargo gpubench setup` then finds it installed, and what follows finds
//! libtorch there with no variable set.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cargo_gpubench::build::libtorch::LIBTORCH_VERSION;
use cargo_gpubench::build::setup;

use crate::workflow::{self, Step};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-gpubench is inside the workspace")
        .to_path_buf()
}

/// The venv `scripts/env.sh` installed torch and the CUDA headers into.
fn project_venv() -> PathBuf {
    let venv = std::env::var_os("GPUBENCH_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv"));
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

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
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
/// cargo's test runner set, with an empty cargo home and gpubench cache.
struct Runner {
    cargo_home: PathBuf,
    cache: PathBuf,
    path: OsString,
    vars: Vec<(String, String)>,
}

impl Runner {
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
        for (k, v) in &self.vars {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs `step` of a template in `dir`; its output.
    fn run(&self, dir: &Path, step: &Step) -> String {
        let started = Instant::now();
        let script = step.run.as_deref().expect("a run step");
        let out = self.command(dir, script).output().expect("bash runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "step {:?}: {:.0} s",
            step.label(),
            started.elapsed().as_secs_f64()
        );
        assert!(
            out.status.success(),
            "step {:?} failed ({}):\n{script}\n{text}",
            step.label(),
            out.status
        );
        text
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

#[test]
#[ignore = "many minutes: builds cargo-gpubench, tch and gpubench-core from scratch; .ci/run runs it"]
fn the_templates_install_steps_build_benchmarks_with_kernel_timing_in_a_fresh_directory() {
    let started = Instant::now();
    let repo = repo_root();
    let head = git(&repo, &["rev-parse", "HEAD"]);
    if !git(&repo, &["status", "--porcelain", "--untracked-files=no"]).is_empty() {
        eprintln!(
            "note: the checkout has uncommitted changes; this installs HEAD ({head}) without them"
        );
    }
    let matrix = workflow::template("gpubench-matrix.yml");
    let single = workflow::template("gpubench.yml");
    let build = matrix.jobs.iter().find(|j| j.id == "build").unwrap();
    let bench = single.jobs.iter().find(|j| j.id == "bench").unwrap();
    let (install, set_up) = (
        step(build, "Install cargo-gpubench"),
        step(build, "Set up libtorch and the CUDA headers"),
    );
    // gpubench.yml installs and sets up with the same steps: this covers both.
    assert_eq!(step(bench, "Install cargo-gpubench").run, install.run);
    assert_eq!(
        step(bench, "Set up libtorch and the CUDA headers").run,
        set_up.run
    );

    let tmp = tempfile::Builder::new()
        .prefix("gpubench-fresh-")
        .tempdir()
        .unwrap();
    // The repository as a user's runner fetches it, at the commit under test.
    let clone = tmp.path().join("cargo-gpubench.git");
    git(
        &repo,
        &["clone", "--bare", "--quiet", ".", clone.to_str().unwrap()],
    );
    let url = format!("file://{}", clone.display());

    // The setup cache as actions/cache restores it.
    let cache = tmp.path().join("cache");
    let venv = cache.join(format!("torch-{LIBTORCH_VERSION}"));
    std::fs::create_dir_all(&venv).unwrap();
    std::os::unix::fs::symlink(project_venv().join("lib"), venv.join("lib")).unwrap();
    std::fs::write(
        venv.join(".installed"),
        format!("torch=={LIBTORCH_VERSION}\n"),
    )
    .unwrap();
    assert!(setup::is_installed(&venv), "the layout is not setup's");

    let cargo_home = tmp.path().join("cargo-home");
    let path =
        std::env::join_paths(std::iter::once(cargo_home.join("bin")).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).filter(|p| {
                !p.join("activate").is_file() && !p.to_string_lossy().contains("/.venv/")
            }),
        ))
        .unwrap();
    let runner = Runner {
        cargo_home,
        cache,
        path,
        vars: vec![
            ("GPUBENCH_GIT".into(), url.clone()),
            ("GPUBENCH_REV".into(), head.clone()),
        ],
    };

    // A user's workspace with one benchmark, as the README's "Writing a benchmark".
    let ws = tmp.path().join("my-kernels");
    std::fs::create_dir_all(ws.join("benches")).unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        format!(
            "[package]\nname = \"my-kernels\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [workspace]\n\n[lib]\nbench = false\n\n[dev-dependencies]\n\
             gpubench-core = {{ git = \"{url}\", rev = \"{head}\" }}\ntch = \"=0.24.0\"\n\n\
             [[bench]]\nname = \"kernels\"\nharness = false\n"
        ),
    )
    .unwrap();
    std::fs::write(
        ws.join("benches/kernels.rs"),
        "use gpubench_core::{gpu_bench, Bencher};\nuse tch::{Kind, Tensor};\n\n\
         #[gpu_bench]\nfn add(b: &mut Bencher) {\n    \
         let x = Tensor::ones([1024], (Kind::Float, b.device()));\n    \
         b.iter(|| &x + 1.0);\n}\n\ngpubench_core::main!();\n",
    )
    .unwrap();

    runner.run(&ws, install);
    // A runner that has it already (a self-hosted one) installs nothing again.
    let again = runner.run(&ws, install);
    assert!(again.contains("is already installed"), "{again}");
    let said = runner.run(&ws, set_up);
    assert!(said.contains("already set up"), "{said}");
    runner.run(&ws, step(build, "Build and archive the benchmarks"));

    // The archive the GPU jobs get, and the binary beside it.
    assert!(
        ws.join("cargo-gpubench").is_file(),
        "the build step copies cargo-gpubench"
    );
    let out = tmp.path().join("extracted");
    std::fs::create_dir_all(&out).unwrap();
    let extracted =
        cargo_gpubench::archive::unpack::extract(&ws.join("benches.tar.gz"), &out).unwrap();
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
