#!/usr/bin/env bash
# The checks CI runs before the tests: formatting, clippy with every warning an error (the
# workspace lints in Cargo.toml included: an `unsafe` block without a `// SAFETY:` comment
# fails here), and the documentation built without a warning.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

echo "sylva check: cargo fmt --all --check" >&2
cargo fmt --all --check
echo "sylva check: cargo clippy --workspace --all-targets --locked -- -D warnings" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "sylva check: cargo doc --workspace --no-deps --locked (warnings are errors)" >&2
RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings" cargo doc --workspace --no-deps --locked
