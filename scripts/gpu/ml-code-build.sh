#!/usr/bin/env bash
# On a machine with Rust (no GPU needed): what scripts/gpu/ml-code-validation.sh runs
# on a GPU machine without cargo, in gpubench-bin/ml-code/:
#   cargo-gpubench            the subcommand, release
#   base/ml_code              the examples' ml_code bench executable at HEAD
#   planted/ml_code           the same with PLANTED = true (a read-back added to a
#                             training step, a 3% larger batch, a bounded cache)
#   ab-self/{base,head}       HEAD against a commit that changes only a comment, as
#                             loadable libraries (`ab --export-libraries`)
#   ab-plant/{base,head}      HEAD against the planted commit
# The two commits are made in throwaway worktrees, never in the checkout. Run from the
# repository root, with HEAD committed.
set -euo pipefail
source scripts/env.sh
B=gpubench-bin/ml-code
rm -rf "$B"
mkdir -p "$B/base" "$B/planted"
export CARGO_TARGET_DIR="$PWD/target"
cargo build --release -p cargo-gpubench
cp target/release/cargo-gpubench "$B/"
exe() { # the newest ml_code bench executable
    ls -t target/release/deps/ml_code-* | grep -v '\.d$' | head -1
}
cargo bench --no-run -p gpubench-examples --bench ml_code
cp "$(exe)" "$B/base/ml_code"

tmp="$(mktemp -d)"
self="$tmp/self" plant="$tmp/plant"
git worktree add --quiet --detach "$self" HEAD
git worktree add --quiet --detach "$plant" HEAD
trap 'git worktree remove --force "$self"; git worktree remove --force "$plant"; rm -rf "$tmp"' EXIT
commit() { # dir, message
    git -C "$1" -c user.name=gpubench -c user.email=gpubench@localhost \
        commit --quiet --all -m "$2"
    git -C "$1" rev-parse HEAD
}
sed -i 's|^//! Ordinary ML code|//! Ordinary machine-learning code|' "$self/examples/benches/ml_code.rs"
same="$(commit "$self" "ml_code: a comment only")"
sed -i 's|^const PLANTED: bool = false;|const PLANTED: bool = true;|' "$plant/examples/benches/ml_code.rs"
grep -q 'const PLANTED: bool = true;' "$plant/examples/benches/ml_code.rs"
planted="$(commit "$plant" "ml_code: planted changes")"
(cd "$plant" && cargo bench --no-run -p gpubench-examples --bench ml_code)
cp "$(exe)" "$B/planted/ml_code"

targets=(-p gpubench-examples --bench ml_code)
"$B/cargo-gpubench" gpubench ab --manifest-path examples/Cargo.toml "${targets[@]}" \
    --base HEAD --head "$same" --export-libraries "$B/ab-self"
"$B/cargo-gpubench" gpubench ab --manifest-path examples/Cargo.toml "${targets[@]}" \
    --base HEAD --head "$planted" --export-libraries "$B/ab-plant"
du -sh "$B"
