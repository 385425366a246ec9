#!/usr/bin/env bash
# Sylva's main job: the viewer (`sylva view`), a forest in gusting wind. Without a display it
# renders the scene headless to a PNG instead and says where. Arguments, when given, go to the
# `sylva` command instead (e.g. `./scripts/run.sh view --species black_tupelo --trees 4`).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
. "$root/scripts/setup.sh"
cargo build --release --locked -q -p sylva-tools --manifest-path "$root/Cargo.toml"
if [ $# -eq 0 ]; then
    set -- view
fi
exec "$CARGO_TARGET_DIR/release/sylva" "$@"
