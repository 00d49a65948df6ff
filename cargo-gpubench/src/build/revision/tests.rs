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

#[test]
fn base_defaults_to_the_merge_base_with_main_and_head_to_the_working_tree() {
    let (repo, a, _, c) = branched();
    let (base, head) = resolve(repo.path(), None, None, &target(&repo)).unwrap();

    assert_eq!(base.role, Role::Base);
    assert_eq!(base.commit.as_deref(), Some(a.as_str()));
    assert_eq!(base.chosen_by, "the merge-base of HEAD with main");
    assert_eq!(base.checkout, Checkout::Worktree);
    assert!(a.starts_with(&base.label) && base.label.len() >= 7);
    assert_eq!(base.root, target(&repo).join(WORKTREES_DIR).join(&a));
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
    assert_eq!(head.key(), "working-tree");
    // Nothing ignores target/, yet the worktrees `ab` made in it are no change.
    let (_, head) = resolve(repo.path(), None, None, &target(&repo)).unwrap();
    assert!(target(&repo).join(WORKTREES_DIR).join(&a).is_dir());
    assert!(!head.dirty, "a clean working tree");
    fs::write(target(&repo).join("notes"), "").unwrap();
    let (_, head) = resolve(repo.path(), None, None, &target(&repo)).unwrap();
    assert!(head.dirty, "an untracked file makes it dirty");
    fs::remove_file(target(&repo).join("notes")).unwrap();
    fs::write(repo.path().join("bench.rs"), "edited\n").unwrap();
    let (_, head) = resolve(repo.path(), None, None, &target(&repo)).unwrap();
    assert!(head.dirty, "an uncommitted change makes it dirty");
}

#[test]
fn origin_head_comes_before_the_local_branches() {
    let (repo, _, b, c) = branched();
    // origin/HEAD → origin/trunk, which is at C: the merge-base with HEAD is C, where
    // main would give A.
    repo.git(&["update-ref", "refs/remotes/origin/trunk", &c]);
    repo.git(&[
        "symbolic-ref",
        "refs/remotes/origin/HEAD",
        "refs/remotes/origin/trunk",
    ]);
    let (base, _) = resolve(repo.path(), None, None, &target(&repo)).unwrap();
    assert_eq!(base.commit.as_deref(), Some(c.as_str()));
    assert_eq!(
        base.chosen_by,
        "the merge-base of HEAD with origin/trunk (origin/HEAD)"
    );

    // Without origin/HEAD, origin/main comes before main.
    repo.git(&["symbolic-ref", "--delete", "refs/remotes/origin/HEAD"]);
    repo.git(&["update-ref", "refs/remotes/origin/main", &b]);
    let (base, _) = resolve(repo.path(), None, None, &target(&repo)).unwrap();
    assert_eq!(base.chosen_by, "the merge-base of HEAD with origin/main");
}

#[test]
fn base_and_head_revisions_are_checked_out_by_name() {
    let (repo, a, b, _) = branched();
    let (base, head) = resolve(repo.path(), Some("main"), Some("HEAD~1"), &target(&repo)).unwrap();
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
    let err = resolve(plain.path(), None, None, &plain.path().join("target")).unwrap_err();
    assert!(matches!(err, RevisionError::NotARepository { .. }), "{err}");
    assert!(
        err.to_string().contains("not inside a git repository"),
        "{err}"
    );

    let (repo, ..) = branched();
    let err = resolve(repo.path(), Some("no-such-rev"), None, &target(&repo)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to resolve --base no-such-rev: git knows no commit by that name; pass a \
         commit, branch or tag (`git log --oneline` lists commits)"
    );
    let err = resolve(repo.path(), None, Some("--all"), &target(&repo)).unwrap_err();
    assert!(err.to_string().contains("--head --all"), "{err}");

    let lone = Repo::new("dev");
    lone.commit(&[("Cargo.toml", "")], "only");
    let err = resolve(lone.path(), None, None, &lone.path().join("target")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to find the base revision: no default branch to take the merge-base with \
         (tried origin/HEAD, origin/main, origin/master, main, master); pass --base REV"
    );

    let empty = Repo::new("main");
    let err = resolve(empty.path(), None, None, &empty.path().join("target")).unwrap_err();
    assert!(matches!(err, RevisionError::NoHead), "{err}");
}

#[test]
fn worktrees_are_reused_and_half_made_ones_are_made_again() {
    let (repo, a, ..) = branched();
    let dir = target(&repo).join(WORKTREES_DIR);
    let (base, _) = resolve(repo.path(), None, None, &target(&repo)).unwrap();
    let marker = fs::metadata(dir.join(format!("{a}.ready")))
        .unwrap()
        .modified()
        .unwrap();

    // Reused, with a changed tracked file put back.
    fs::write(base.root.join("bench.rs"), "changed\n").unwrap();
    let (again, _) = resolve(repo.path(), None, None, &target(&repo)).unwrap();
    assert_eq!(again.root, base.root);
    assert_eq!(
        fs::read_to_string(again.root.join("bench.rs")).unwrap(),
        "a\n"
    );
    let still = fs::metadata(dir.join(format!("{a}.ready")))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(marker, still, "reused, not made again");

    // A killed `ab` left the directory without its marker: made again, whole.
    fs::remove_file(dir.join(format!("{a}.ready"))).unwrap();
    fs::remove_file(base.root.join("bench.rs")).unwrap();
    fs::write(base.root.join("debris"), "").unwrap();
    let (remade, _) = resolve(repo.path(), None, None, &target(&repo)).unwrap();
    assert_eq!(
        fs::read_to_string(remade.root.join("bench.rs")).unwrap(),
        "a\n"
    );
    assert!(!remade.root.join("debris").exists());

    // `cargo clean` removed the worktrees: git's stale record is pruned, no refusal.
    fs::remove_dir_all(target(&repo)).unwrap();
    let (fresh, _) = resolve(repo.path(), None, None, &target(&repo)).unwrap();
    assert_eq!(
        fs::read_to_string(fresh.root.join("bench.rs")).unwrap(),
        "a\n"
    );
    let listed = repo.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(
        listed.matches("worktree ").count(),
        2,
        "the main tree and one worktree: {listed}"
    );
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
    let (base, head) = resolve(&ws, None, None, &ws.join("target")).unwrap();
    assert_eq!(head.root, ws);
    assert_eq!(
        base.root,
        ws.join("target").join(WORKTREES_DIR).join(&a).join("ws")
    );
    assert_eq!(fs::read_to_string(base.manifest_path()).unwrap(), "# a\n");
    assert_eq!(
        fs::read_to_string(base.root.join("Cargo.lock")).unwrap(),
        "# lock\n"
    );

    // A commit before the workspace existed.
    repo.git(&["rm", "--quiet", "ws/Cargo.toml"]);
    repo.git(&["commit", "--quiet", "-m", "no workspace"]);
    let gone = repo.git(&["rev-parse", "HEAD"]);
    fs::create_dir_all(&ws).unwrap();
    fs::write(ws.join("Cargo.toml"), "# back\n").unwrap();
    let err = resolve(&ws, Some(&gone), None, &ws.join("target")).unwrap_err();
    assert!(
        err.to_string()
            .contains("ws/Cargo.toml does not exist in that commit"),
        "{err}"
    );
}
