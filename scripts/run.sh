#!/usr/bin/env bash
# Sylva's main job. For now: a headless simulation of Weber's dense tree that prints the
# benchmark table. Arguments, when given, go to the `sylva` command instead.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
cargo build --release --locked -q -p sylva-tools
if [ $# -eq 0 ]; then
    set -- bench sim
fi
exec "$CARGO_TARGET_DIR/release/sylva" "$@"
