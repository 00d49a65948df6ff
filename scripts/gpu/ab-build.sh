#!/usr/bin/env bash
# On a machine with Rust (no GPU needed): what scripts/gpu/ab-validation.sh runs on a
# GPU machine without cargo, in gpubench-bin/:
#   cargo-gpubench                the subcommand, release
#   launch, matmul, mlp_training  the examples' bench executables, for a plain run
#   ab-self/{base,head}           the examples' launch, matmul and mlp_training
#                                 targets of HEAD as loadable libraries, twice (two
#                                 files each, so each side is loaded on its own)
#   ab-plant/{base,head}          HEAD against HEAD with scripts/gpu/ab-plant.py's
#                                 planted changes (committed in a throwaway worktree)
# Run from the repository root, with HEAD committed.
set -euo pipefail
source scripts/env.sh
B=gpubench-bin
mkdir -p "$B"
cargo build --release -p cargo-gpubench
cp target/release/cargo-gpubench "$B/"
cargo bench --no-run -p gpubench-examples --bench launch --bench matmul --bench mlp_training
for n in launch matmul mlp_training; do
    cp "$(ls -t target/release/deps/$n-* | grep -v '\.d$' | head -1)" "$B/$n"
done
plant="$(mktemp -d)/plant"
git worktree add --quiet --detach "$plant" HEAD
trap 'git worktree remove --force "$plant"' EXIT
python3 scripts/gpu/ab-plant.py "$plant/examples"
git -C "$plant" -c user.name=gpubench -c user.email=gpubench@localhost \
    commit --quiet --all -m "plant: 5% host-side cost on launch-bound, 3% more matmul work"
planted="$(git -C "$plant" rev-parse HEAD)"
targets=(-p gpubench-examples --bench launch --bench matmul --bench mlp_training)
"$B/cargo-gpubench" gpubench ab --manifest-path examples/Cargo.toml "${targets[@]}" \
    --base HEAD --head HEAD --export-libraries "$B/ab-self"
"$B/cargo-gpubench" gpubench ab --manifest-path examples/Cargo.toml "${targets[@]}" \
    --base HEAD --head "$planted" --export-libraries "$B/ab-plant"
du -sh "$B"
