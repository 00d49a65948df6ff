//! The README's "Writing a benchmark", verbatim but for the dependency's source (the
//! README's path form beside a clone for its git line: no network here), in a new
//! workspace outside this repository: its Cargo.toml lines and bench file, this
//! checkout beside the workspace as the README's path form assumes, `cargo gpubench` found on `PATH` as `cargo
//! install` would put it, and no libtorch variable set — only a `python3` with
//! PyTorch 2.11 on `PATH`, as a user who ran `pip install torch` has.
//!
//! The build shares `<repo>/target/nested` with `fixture_workspace.rs` so tch is built
//! once; that changes where cargo builds, not what a user does.

use std::path::{Path, PathBuf};

use crate::support::{latest_run, manifest, run};
use cargo_gpubench::testing::store::manifest::{BenchStatus, RunStatus};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cargo-gpubench is inside the workspace")
        .to_path_buf()
}

/// The body of the first fenced block of `lang` after `heading` in the README.
fn readme_block(readme: &str, heading: &str, lang: &str) -> String {
    let section = &readme[readme
        .find(heading)
        .unwrap_or_else(|| panic!("README has no {heading:?}"))..];
    let fence = format!("```{lang}\n");
    let start = section.find(&fence).expect("a fenced block") + fence.len();
    let end = start + section[start..].find("```").expect("a closing fence");
    section[start..end].to_string()
}

/// The `bin/` of the virtual environment scripts/env.sh uses, holding a python3 with
/// torch.
fn python_with_torch() -> PathBuf {
    let bin = crate::support::project_venv().join("bin");
    assert!(
        bin.join("python3").exists(),
        "{} has no python3: run `source scripts/env.sh` once to make the venv",
        bin.display()
    );
    bin
}

#[test]
fn the_readme_workspace_builds_and_runs_outside_the_repository() {
    let _machine = crate::sharing();
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let toml = readme_block(&readme, "## Writing a benchmark", "toml");
    let rust = readme_block(&readme, "## Writing a benchmark", "rust");
    // The README's dependency is a git one at a revision (what a CI runner can
    // fetch); beside a clone, it says, the path form works too. The test has no
    // network: it takes that path form for the git line and the rest verbatim.
    let git_line = toml
        .lines()
        .find(|l| l.starts_with("gpubench-core = { git = ") && l.contains("rev = "))
        .unwrap_or_else(|| panic!("the README's dependency is a git one at a revision: {toml}"))
        .to_string();
    let path_form = "gpubench-core = { path = \"../cargo-gpubench/gpubench-core\" }";
    assert!(
        readme.contains("path = \"../cargo-gpubench/gpubench-core\""),
        "the README names the path form for a clone beside the workspace"
    );
    let toml = toml.replace(&git_line, path_form);

    let tmp = tempfile::tempdir().unwrap();
    // This checkout beside the user's workspace, as the README's path assumes.
    std::os::unix::fs::symlink(repo_root(), tmp.path().join("cargo-gpubench")).unwrap();
    let ws = tmp.path().join("my-kernels");
    std::fs::create_dir_all(ws.join("benches")).unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        ws.join("Cargo.toml"),
        format!(
            "[package]\nname = \"my-kernels\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [workspace]\n\n{toml}"
        ),
    )
    .unwrap();
    std::fs::write(ws.join("benches/kernels.rs"), rust).unwrap();

    // `cargo install` puts the subcommand on PATH; python3 with torch comes first.
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_cargo-gpubench"),
        bin.join("cargo-gpubench"),
    )
    .unwrap();
    let path = std::env::join_paths([bin, python_with_torch()].into_iter().chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.current_dir(&ws)
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", repo_root().join("target/nested"))
        .env("GPUBENCH_CACHE_DIR", tmp.path().join("cache"));
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("GPUBENCH_") || key.starts_with("LIBTORCH") || key == "LD_LIBRARY_PATH" {
            cmd.env_remove(key);
        }
    }
    // The README's command, on the CPU and quick (the timings are not the point).
    cmd.args(["gpubench", "matmul_bf16/1024", "--device", "cpu", "--quick"]);
    let ran = run(&mut cmd);
    assert_eq!(
        ran.code,
        Some(0),
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        ran.stdout,
        ran.stderr
    );
    assert!(
        ran.stderr.contains("from python3's torch"),
        "libtorch was found without any variable: {}",
        ran.stderr
    );
    let out = repo_root().join("target/nested/gpubench");
    let m = manifest(&latest_run(&out));
    assert_eq!(m.status, RunStatus::Completed);
    assert_eq!(m.benchmarks.len(), 1);
    assert_eq!(m.benchmarks[0].id, "matmul_bf16/1024");
    assert_eq!(m.benchmarks[0].status, BenchStatus::Passed);
}

/// The relative link targets of a Markdown file: `](target)`, without `#anchor`.
fn relative_links(markdown: &str) -> Vec<String> {
    markdown
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|t| t.split('#').next().unwrap_or_default().to_string())
        .filter(|t| !t.is_empty() && !t.contains("://"))
        .collect()
}

#[test]
fn the_readme_is_short_and_it_and_the_guide_link_only_to_files_that_exist() {
    let _machine = crate::sharing();
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.len() <= 10 * 1024,
        "README.md is {} bytes, more than 10 KB: move the detail into a page of docs/guide/",
        readme.len()
    );
    assert!(
        readme.contains("](docs/guide/README.md)"),
        "README.md does not link the guide's index"
    );
    let guide = root.join("docs/guide");
    let mut files = vec![root.join("README.md")];
    for entry in std::fs::read_dir(&guide).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let index = std::fs::read_to_string(guide.join("README.md")).unwrap();
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for target in relative_links(&text) {
            let dir = file.parent().unwrap();
            if !dir.join(&target).exists() {
                broken.push(format!("{} -> {target}", file.display()));
            }
        }
        // Every page of the guide is reachable from its index.
        let name = file.file_name().unwrap().to_string_lossy();
        if file.parent() == Some(guide.as_path()) && name != "README.md" {
            assert!(
                index.contains(&format!("]({name})")),
                "docs/guide/README.md does not link {name}"
            );
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:#?}");
}
