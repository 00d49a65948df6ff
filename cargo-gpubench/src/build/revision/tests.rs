//! Revisions found in temporary git repositories: the default branch and its
//! merge-base, `--base`/`--head`, refusals, and worktrees made, reused and remade.

use std::process::Command;

use super::*;

/// A git repository in a temporary directory, committing as a fixed author.
struct Repo {
    dir: tempfile::TempDir,
}

impl Repo {
    /// A repository on branch `main` (or `branch`) without commits.
    fn new(branch: &str) -> Self {
        let repo = Repo {
            dir: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "--quiet", "-b", branch]);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(self.path())
            .args([
                "-c",
                "user.name=gpubench test",
                "-c",
                "user.email=test@example.com",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Writes `files` and commits them; the new commit's sha.
    fn commit(&self, files: &[(&str, &str)], message: &str) -> String {
        for (name, text) in files {
            let path = self.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        self.git(&["add", "--all"]);
        self.git(&["commit", "--quiet", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }
}

/// main: A ← B; feature: A ← C, checked out. Returns (repo, A, B, C).
fn branched() -> (Repo, String, String, String) {
    let repo = Repo::new("main");
    let a = repo.commit(&[("Cargo.toml", "# a\n"), ("bench.rs", "a\n")], "a");
    let b = repo.commit(&[("bench.rs", "b\n")], "b");
    repo.git(&["checkout", "--quiet", "-b", "feature", &a]);
    let c = repo.commit(&[("bench.rs", "c\n")], "c");
    (repo, a, b, c)
}

fn target(repo: &Repo) -> PathBuf {
    repo.path().join("target")
}

/// `resolve` run from the repository's root, expecting two revisions to compare.
fn compare(repo: &Repo, base: Option<&str>, head: Option<&str>) -> Resolved {
    compare_in(repo.path(), repo.path(), base, head, &target(repo))
}

fn compare_in(
    ws: &Path,
    cwd: &Path,
    base: Option<&str>,
    head: Option<&str>,
    target_dir: &Path,
) -> Resolved {
    match resolve(ws, cwd, base, head, target_dir) {
        Ok(Resolution::Compare(r)) => *r,
        other => panic!("two revisions to compare: {other:?}"),
    }
}

fn resolve_err(ws: &Path, base: Option<&str>, head: Option<&str>) -> RevisionError {
    resolve(ws, ws, base, head, &ws.join("target")).unwrap_err()
}

/// The worktrees git knows of, the main one aside.
fn worktrees(repo: &Repo) -> Vec<String> {
    repo.git(&["worktree", "list", "--porcelain"])
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .skip(1)
        .map(str::to_string)
        .collect()
}

/// Where the worktree of `sha` goes: beside the repository.
fn beside(repo: &Repo, sha: &str) -> PathBuf {
    let top = repo.path().canonicalize().unwrap();
    top.parent().unwrap().join(format!(
        ".{}.gpubench-ab-{}",
        top.file_name().unwrap().to_string_lossy(),
        &sha[..12]
    ))
}

#[test]
fn base_defaults_to_the_merge_base_with_main_and_head_to_the_working_tree() {
    let (repo, a, _, c) = branched();
    let Resolved {
        base,
        head,
        checkouts,
        notes,
    } = compare(&repo, None, None);
    assert!(notes.is_empty(), "{notes:?}");

    assert_eq!(base.role, Role::Base);
    assert_eq!(base.commit.as_deref(), Some(a.as_str()));
    assert_eq!(base.chosen_by, "the merge-base of HEAD with main");
    assert_eq!(base.checkout, Checkout::Worktree);
    assert!(a.starts_with(&base.label) && base.label.len() >= 7);
    assert_eq!(base.root, beside(&repo, &a));
    assert_eq!(base.run_dir, base.root, "ab runs at the workspace root");
    assert_eq!(
        fs::read_to_string(base.root.join("bench.rs")).unwrap(),
        "a\n",
        "the base's files are commit A's"
    );
    assert_eq!(base.key(), &a[..12]);

    assert_eq!(head.role, Role::Head);
    assert_eq!(head.label, "working tree");
    assert_eq!(head.checkout, Checkout::WorkingTree);
    assert_eq!(head.commit.as_deref(), Some(c.as_str()));
    assert_eq!(head.root, repo.path());
    assert_eq!(head.run_dir, repo.path());
    assert_eq!(head.key(), "working-tree");
    assert!(!head.dirty, "a clean working tree");
    drop(checkouts);

    fs::create_dir_all(target(&repo)).unwrap();
    fs::write(target(&repo).join("notes"), "").unwrap();
    assert!(
        compare(&repo, None, None).head.dirty,
        "an untracked file makes it dirty"
    );
    fs::remove_file(target(&repo).join("notes")).unwrap();
    fs::write(repo.path().join("bench.rs"), "edited\n").unwrap();
    assert!(
        compare(&repo, None, None).head.dirty,
        "an uncommitted change makes it dirty"
    );
    assert!(worktrees(&repo).is_empty(), "{:?}", worktrees(&repo));
}

#[test]
fn origin_head_comes_before_the_local_branches() {
    let (repo, _, b, c) = branched();
    // origin/HEAD → origin/trunk, which is at C: the merge-base with HEAD is C, where
    // main would give A. The working tree is C and clean: nothing to compare.
    repo.git(&["update-ref", "refs/remotes/origin/trunk", &c]);
    repo.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/trunk",
    ]);
    let found = resolve(repo.path(), repo.path(), None, None, &target(&repo)).unwrap();
    let Resolution::Identical {
        commit,
        base_chosen_by,
        ..
    } = found
    else {
        panic!("HEAD is its own merge-base: {found:?}")
    };
    assert_eq!(commit, c);
    assert_eq!(
        base_chosen_by,
        "the merge-base of HEAD with origin/trunk (origin/HEAD)"
    );

    // Without origin/HEAD, origin/main comes before main.
    repo.git(&["symbolic-ref", "--delete", "refs/remotes/origin/HEAD"]);
    repo.git(&["update-ref", "refs/remotes/origin/main", &b]);
    let base = compare(&repo, None, None).base;
    assert_eq!(base.chosen_by, "the merge-base of HEAD with origin/main");
}

#[test]
fn the_same_code_on_both_sides_is_nothing_to_compare_and_checks_nothing_out() {
    let (repo, a, b, c) = branched();
    // On main, clean, with main as the default branch: HEAD is its own merge-base.
    repo.git(&["checkout", "--quiet", "main"]);
    let found = resolve(repo.path(), repo.path(), None, None, &target(&repo)).unwrap();
    assert!(
        matches!(&found, Resolution::Identical { commit, head_chosen_by, .. }
            if *commit == b && head_chosen_by.contains("working tree")),
        "{found:?}"
    );
    assert!(worktrees(&repo).is_empty(), "nothing checked out");
    // --base and --head naming one commit.
    let found = resolve(repo.path(), repo.path(), Some(&a), Some(&a), &target(&repo)).unwrap();
    assert!(matches!(found, Resolution::Identical { .. }), "{found:?}");
    // An uncommitted change is something to compare.
    fs::write(repo.path().join("bench.rs"), "edited\n").unwrap();
    let r = compare(&repo, None, None);
    assert_eq!(r.base.commit.as_deref(), Some(b.as_str()));
    assert!(r.head.dirty);
    drop(r);
    let _ = c;
}

#[test]
fn base_and_head_revisions_are_checked_out_by_name() {
    let (repo, a, b, _) = branched();
    let Resolved {
        base,
        head,
        checkouts: _held,
        ..
    } = compare(&repo, Some("main"), Some("HEAD~1"));
    assert_eq!(base.commit.as_deref(), Some(b.as_str()));
    assert_eq!(base.chosen_by, "--base main");
    assert_eq!(head.commit.as_deref(), Some(a.as_str()));
    assert_eq!(head.chosen_by, "--head HEAD~1");
    assert_eq!(head.checkout, Checkout::Worktree);
    assert!(!head.dirty);
    assert_eq!(
        fs::read_to_string(head.root.join("bench.rs")).unwrap(),
        "a\n"
    );
    assert_eq!(
        fs::read_to_string(base.root.join("bench.rs")).unwrap(),
        "b\n"
    );
}

#[test]
fn refusals_say_what_to_pass() {
    let plain = tempfile::tempdir().unwrap();
    let err = resolve_err(plain.path(), None, None);
    assert!(matches!(err, RevisionError::NotARepository { .. }), "{err}");
    assert!(
        err.to_string().contains("not inside a git repository"),
        "{err}"
    );

    let (repo, ..) = branched();
    let err = resolve_err(repo.path(), Some("no-such-rev"), None);
    assert_eq!(
        err.to_string(),
        "failed to resolve --base no-such-rev: git knows no commit by that name; pass a \
         commit, branch or tag (`git log --oneline` lists commits)"
    );
    let err = resolve_err(repo.path(), None, Some("--all"));
    assert!(err.to_string().contains("--head --all"), "{err}");

    let lone = Repo::new("dev");
    lone.commit(&[("Cargo.toml", "")], "only");
    let err = resolve_err(lone.path(), None, None);
    assert_eq!(
        err.to_string(),
        "failed to find the base revision: no default branch to take the merge-base with \
         (tried origin/HEAD, origin/main, origin/master, main, master); pass --base REV"
    );

    let empty = Repo::new("main");
    let err = resolve_err(empty.path(), None, None);
    assert!(matches!(err, RevisionError::NoHead), "{err}");

    // Unrelated histories.
    let (repo, ..) = branched();
    repo.git(&["checkout", "--quiet", "--orphan", "other"]);
    repo.commit(&[("x", "x\n")], "unrelated");
    let err = resolve_err(repo.path(), None, None);
    assert_eq!(
        err.to_string(),
        "failed to find the base revision: HEAD and main have no common ancestor; pass \
         --base REV"
    );
}

#[test]
fn a_shallow_clone_without_the_merge_base_is_told_to_fetch_the_history() {
    let (repo, ..) = branched();
    // Cloned with main as its default branch.
    repo.git(&["checkout", "--quiet", "main"]);
    let clone = tempfile::tempdir().unwrap();
    let url = format!("file://{}", repo.path().display());
    let out = Command::new("git")
        .args([
            "clone",
            "--quiet",
            "--depth",
            "1",
            "--no-single-branch",
            &url,
        ])
        .arg(clone.path().join("c"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ws = clone.path().join("c");
    // feature and main each cut to their tip: no common ancestor fetched.
    let out = Command::new("git")
        .arg("-C")
        .arg(&ws)
        .args(["checkout", "--quiet", "feature"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = resolve_err(&ws, None, None).to_string();
    assert!(
        err.contains("no common ancestor")
            && err.contains("shallow")
            && err.contains("fetch-depth: 0")
            && err.contains("--base REV"),
        "{err}"
    );
}

#[test]
fn a_worktree_is_removed_when_the_last_ab_using_it_lets_go() {
    let (repo, a, ..) = branched();
    let first = compare(&repo, None, None);
    let path = first.base.root.clone();
    // A second `ab` at once, of the same base: the same worktree, shared.
    let second = compare(&repo, None, None);
    assert_eq!(second.base.root, path);
    drop(first);
    assert!(
        path.join("bench.rs").is_file(),
        "the second `ab` still uses it"
    );
    let problems = second.checkouts.release();
    assert!(problems.is_empty(), "{problems:?}");
    assert!(!path.exists(), "the last one out removes it");
    assert!(worktrees(&repo).is_empty(), "{:?}", worktrees(&repo));
    assert_eq!(path, beside(&repo, &a));
}

#[test]
fn a_worktree_a_killed_ab_left_is_removed_by_the_next_and_half_made_ones_made_again() {
    let (repo, a, ..) = branched();
    let r = compare(&repo, None, None);
    let path = r.base.root.clone();
    // Killed: the worktree stays, and nobody holds its lock.
    r.checkouts.abandon();
    assert!(path.is_dir());
    fs::write(path.join("debris"), "").unwrap();
    fs::remove_file(path.join("bench.rs")).unwrap();

    // The next `ab` (of another base) removes it.
    let other = compare(&repo, Some("main"), None);
    assert!(!path.exists(), "the stale worktree is gone");
    drop(other);

    // Half made: the directory there without its ready marker.
    fs::create_dir_all(path.join("junk")).unwrap();
    let r = compare(&repo, None, None);
    assert_eq!(r.base.root, path);
    assert_eq!(fs::read_to_string(path.join("bench.rs")).unwrap(), "a\n");
    assert!(!path.join("junk").exists());
    drop(r);
    assert!(!path.exists());

    // `rm -rf` of a worktree: git's stale record is pruned, no refusal.
    let r = compare(&repo, None, None);
    r.checkouts.abandon();
    fs::remove_dir_all(&path).unwrap();
    let fresh = compare(&repo, None, None);
    assert_eq!(
        fs::read_to_string(fresh.base.root.join("bench.rs")).unwrap(),
        "a\n"
    );
    assert_eq!(worktrees(&repo).len(), 1, "{:?}", worktrees(&repo));
    drop(fresh);
    assert!(worktrees(&repo).is_empty(), "{:?}", worktrees(&repo));
    let _ = a;
}

#[test]
fn worktrees_of_the_layout_before_are_removed_with_their_markers() {
    let (repo, a, ..) = branched();
    // What an earlier `ab` left under the target directory.
    let old = target(&repo).join(WORKTREES_DIR);
    fs::create_dir_all(&old).unwrap();
    repo.git(&[
        "worktree",
        "add",
        "--detach",
        "--quiet",
        &old.join(&a).display().to_string(),
        &a,
    ]);
    fs::write(old.join(format!("{a}.ready")), "").unwrap();
    fs::write(old.join(".lock"), "").unwrap();
    let r = compare(&repo, None, None);
    assert!(!old.join(&a).exists());
    assert!(!target(&repo).join("gpubench/ab").exists());
    drop(r);
    assert!(worktrees(&repo).is_empty(), "{:?}", worktrees(&repo));
}

/// The README's layout: a package beside a clone of gpubench, reaching it by a
/// relative path, and the package's target directory inside another workspace.
#[test]
fn relative_paths_that_leave_the_repository_resolve_in_the_worktree_as_in_the_checkout() {
    let outer = tempfile::tempdir().unwrap();
    let clone = outer.path().join("cargo-gpubench");
    fs::create_dir_all(clone.join("gpubench-core")).unwrap();
    fs::write(clone.join("gpubench-core/Cargo.toml"), "# core\n").unwrap();
    let repo = Repo {
        dir: tempfile::tempdir_in(outer.path()).unwrap(),
    };
    repo.git(&["init", "--quiet", "-b", "main"]);
    let manifest =
        "[dependencies]\ngpubench-core = { path = \"../cargo-gpubench/gpubench-core\" }\n";
    let a = repo.commit(&[("Cargo.toml", manifest), ("data/x", "a\n")], "a");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    repo.commit(&[("data/x", "b\n")], "b");
    let sub = repo.path().join("data");
    let r = compare_in(repo.path(), &sub, None, None, &target(&repo));
    let dep = r
        .base
        .root
        .join("../cargo-gpubench/gpubench-core/Cargo.toml");
    assert_eq!(
        fs::read_to_string(&dep).unwrap(),
        "# core\n",
        "{} resolves as in the checkout",
        dep.display()
    );
    // Its processes run in the same directory of the base as `ab` runs in the head.
    assert_eq!(r.base.run_dir, beside(&repo, &a).join("data"));
    assert_eq!(fs::read_to_string(r.base.run_dir.join("x")).unwrap(), "a\n");
    assert_eq!(r.head.run_dir, sub);
    // Nothing above the worktree but the repository's own parent.
    assert_eq!(
        r.base.root.parent(),
        repo.path().canonicalize().unwrap().parent()
    );
}

#[test]
fn where_nothing_can_go_beside_the_repository_the_worktree_goes_under_the_target_directory() {
    let (repo, a, ..) = branched();
    // Something of the user's where the worktree would go (as an unwritable parent
    // would refuse it).
    fs::write(beside(&repo, &a), "mine\n").unwrap();
    let r = compare(&repo, None, None);
    assert_eq!(r.base.root, target(&repo).join(WORKTREES_DIR).join(&a));
    assert_eq!(
        fs::read_to_string(r.base.root.join("bench.rs")).unwrap(),
        "a\n"
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("cannot go beside the repository")),
        "{:?}",
        r.notes
    );
    // Not a change of the working tree.
    assert!(!r.head.dirty);
    drop(r);
    assert!(!target(&repo).join("gpubench/ab").exists());
    assert_eq!(fs::read_to_string(beside(&repo, &a)).unwrap(), "mine\n");
    fs::remove_file(beside(&repo, &a)).unwrap();
}

#[test]
fn a_workspace_in_a_subdirectory_is_found_inside_the_worktree() {
    let repo = Repo::new("main");
    let a = repo.commit(&[("ws/Cargo.toml", "# a\n"), ("README", "")], "a");
    repo.git(&["checkout", "--quiet", "-b", "feature"]);
    repo.commit(&[("ws/Cargo.toml", "# b\n")], "b");
    // The working tree's lock, which the commit lacks, is what the base resolves with.
    fs::write(repo.path().join("ws/Cargo.lock"), "# lock\n").unwrap();
    let ws = repo.path().join("ws");
    let Resolved {
        base,
        head,
        checkouts,
        ..
    } = compare_in(&ws, &ws, None, None, &ws.join("target"));
    assert_eq!(head.root, ws);
    assert_eq!(base.root, beside(&repo, &a).join("ws"));
    assert_eq!(fs::read_to_string(base.manifest_path()).unwrap(), "# a\n");
    assert_eq!(
        fs::read_to_string(base.root.join("Cargo.lock")).unwrap(),
        "# lock\n"
    );
    drop(checkouts);

    // A commit before the workspace existed.
    repo.git(&["rm", "--quiet", "ws/Cargo.toml"]);
    repo.git(&["commit", "--quiet", "-m", "no workspace"]);
    let gone = repo.git(&["rev-parse", "HEAD"]);
    fs::create_dir_all(&ws).unwrap();
    fs::write(ws.join("Cargo.toml"), "# back\n").unwrap();
    let err = resolve_err(&ws, Some(&gone), None);
    assert!(
        err.to_string()
            .contains("ws/Cargo.toml does not exist in that commit"),
        "{err}"
    );
    assert!(worktrees(&repo).is_empty(), "a refusal leaves no worktree");
}

#[test]
fn submodules_that_cannot_be_checked_out_are_named() {
    let (repo, ..) = branched();
    // A .gitmodules naming a submodule whose repository does not exist.
    repo.git(&["checkout", "--quiet", "main"]);
    let sub = Repo::new("main");
    let sub_sha = sub.commit(&[("f", "f\n")], "sub");
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "--quiet",
        &sub.path().display().to_string(),
        "vendor/sub",
    ]);
    repo.git(&["commit", "--quiet", "-m", "submodule"]);
    let with_sub = repo.git(&["rev-parse", "HEAD"]);
    repo.git(&["checkout", "--quiet", "-b", "next"]);
    repo.commit(&[("bench.rs", "next\n")], "next");
    // Its repository goes away: the worktree cannot check it out.
    drop(sub);
    let r = compare(&repo, Some(&with_sub), None);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("submodules") && n.contains("not checked out")),
        "{:?}",
        r.notes
    );
    let _ = sub_sha;
}
