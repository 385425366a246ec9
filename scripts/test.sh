#!/usr/bin/env bash
# Every test of the workspace: unit tests, physics validation, determinism, the command line.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
cargo test --workspace --locked "$@"
