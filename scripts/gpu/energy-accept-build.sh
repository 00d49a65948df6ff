#!/usr/bin/env bash
# On a machine with Rust (no GPU needed): what scripts/gpu/energy-accept.sh runs on a
# GPU machine without cargo or git, in gpubench-bin/energy-accept/:
#   cargo-gpubench            the subcommand, release
#   base/energy               the examples' energy bench executable at HEAD
#   planted/energy            the same with PLANTED = true (10% more work in each
#                             benchmark: one more matmul over a tenth of the rows, a
#                             tenth more micro-batches in the training step)
#   ab-self/{base,head}       HEAD against a commit that changes only a comment, as
#                             loadable libraries (`ab --export-libraries`)
#   ab-plant/{base,head}      HEAD against the planted commit
# The two commits are made in throwaway worktrees, never in the checkout. Run from the
# repository root, with HEAD committed. CARGO_TARGET_DIR is honoured (default
# ./target). The acceptance runs `--gate-on energy` (energy as a metric) and `ab`'s
# paired energy: build from a revision that has both.
set -euo pipefail
source scripts/env.sh
B=gpubench-bin/energy-accept
rm -rf "$B"
mkdir -p "$B/base" "$B/planted"
: "${CARGO_TARGET_DIR:=$PWD/target}"
export CARGO_TARGET_DIR
SUITE=examples/benches/energy.rs
cargo build --release -p cargo-gpubench
cp "$CARGO_TARGET_DIR/release/cargo-gpubench" "$B/"
exe() { # the executable that cargo's JSON messages name for the energy bench target
    python3 -c '
import json, sys
exe = None
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "energy" \
            and "bench" in m["target"].get("kind", []) and m.get("executable"):
        exe = m["executable"]
print(exe or sys.exit("no energy bench executable in cargo'"'"'s messages"))'
}
build_suite() { # the directory of a checkout: builds its energy bench, prints its path
    (cd "$1" && cargo bench --no-run -p gpubench-examples --bench energy \
        --message-format=json-render-diagnostics) | exe
}
cp "$(build_suite .)" "$B/base/energy"

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
sed -i 's|^//! Energy per call, as issue 38|//! Energy per call as issue 38|' "$self/$SUITE"
if cmp -s "$self/$SUITE" "$SUITE"; then echo "the A/A commit changed nothing" >&2; exit 1; fi
same="$(commit "$self" "energy: a comment only")"
sed -i 's|^const PLANTED: bool = false;|const PLANTED: bool = true;|' "$plant/$SUITE"
grep -q 'const PLANTED: bool = true;' "$plant/$SUITE"
planted="$(commit "$plant" "energy: 10% more work in each benchmark")"
cp "$(build_suite "$plant")" "$B/planted/energy"
if cmp -s "$B/base/energy" "$B/planted/energy"; then
    echo "the planted executable equals the base's" >&2
    exit 1
fi

targets=(-p gpubench-examples --bench energy)
"$B/cargo-gpubench" gpubench ab --manifest-path examples/Cargo.toml "${targets[@]}" \
    --base HEAD --head "$same" --export-libraries "$B/ab-self"
"$B/cargo-gpubench" gpubench ab --manifest-path examples/Cargo.toml "${targets[@]}" \
    --base HEAD --head "$planted" --export-libraries "$B/ab-plant"
du -sh "$B"
