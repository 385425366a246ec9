#!/usr/bin/env bash
# Sylva against rapier, the general physics engine: builds `sylva` with the cargo feature
# `peer` (the optional rapier3d dependency, off in run.sh and test.sh so that Sylva's own build
# never compiles it), runs the comparison's tests, then `sylva bench peer` with the figures:
# the dense tree and 100 trees of 1,597 segments, on 1 and 2 threads.
#
# Rapier's multibody assembles and LU-factors a dense mass matrix of every tree each step,
# a cost cubic in the tree's segments (minutes per step for the dense tree on a small
# machine), so rapier takes PEER_STEPS steps (default 1), compared with Sylva's first ones,
# while Sylva's time is taken over 600 steps (--sylva-steps), and rapier runs as many of the
# 100 trees as there are threads (the trees are alike and independent; Sylva runs all 100).
# Both models run in one process per benchmark; timings on a shared machine are noisy.
# Set PEER_SKIP_BENCH=1 to run the tests only, PEER_DENSE=1 to add the dense tree's settled
# pose in wind against rapier's (about an hour and a quarter on a shared 2-core machine).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/scripts/setup.sh"
cd "$root"
steps="${PEER_STEPS:-1}"

cargo build --release --locked -p sylva-tools --features peer
cargo test --release --locked -p sylva-tools --features peer --bin sylva peer -- --nocapture
cargo test --release --locked -p sylva-tools --features peer --test peer_cli
if [ "${PEER_DENSE:-0}" = 1 ]; then
    # Weber's dense tree settled in wind, Sylva against rapier's static iteration (about an
    # hour: each of its eight or so evaluations factors the tree's dense mass matrix).
    cargo test --release --locked -p sylva-tools --features peer --bin sylva dense_tree -- --ignored --nocapture
fi

if [ "${PEER_SKIP_BENCH:-0}" = 1 ]; then
    exit 0
fi
sylva="$CARGO_TARGET_DIR/release/sylva"
for threads in 1 2; do
    "$sylva" bench peer --steps "$steps" --sylva-steps 600 --threads "$threads"
    "$sylva" bench peer --segments 1597 --leaves 3603 --trees 100 --rapier-trees "$threads" \
        --steps "$steps" --sylva-steps 600 --threads "$threads"
done
