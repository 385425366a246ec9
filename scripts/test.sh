#!/usr/bin/env bash
# Every test of the workspace: unit tests, physics validation, determinism, the command line.
# Then the tests that read the third-party tree-spec corpus (named corpus_*, #[ignore]d so that
# a clone without the corpus passes): run when the corpus is found ($SYLVA_TREE_SPECS, else
# shared/data/tree-specs in the checkout's folder or one of its ancestors, e.g.
# ../shared/data/tree-specs), otherwise listed by name as skipped. With SYLVA_REQUIRE_CORPUS=1
# (.ci/run sets it where the corpus is beside the checkout) a corpus not found or a corpus run
# of zero tests fails.
#
# Arguments go to cargo (e.g. --release); those after `--` go to the test binaries of the
# first run only.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

# The viewer's Wayland test runs it under weston's headless backend.
apt_install weston

# The Khronos glTF validator, which the export tests run on the .glb files Sylva writes:
# Node.js and npm from Debian when missing (as root), the validator from the npm registry at a
# pinned version, kept beside the build outputs. The tests find it through SYLVA_GLTF_VALIDATOR.
GLTF_VALIDATOR_VERSION=2.0.0-dev.3.10
export SYLVA_GLTF_VALIDATOR="${SYLVA_GLTF_VALIDATOR:-$HOME/.cache/sylva/gltf-validator-$GLTF_VALIDATOR_VERSION/node_modules/gltf-validator}"
if [ ! -f "$SYLVA_GLTF_VALIDATOR/package.json" ]; then
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
        apt_install nodejs npm
    fi
    echo "sylva setup: installing the Khronos glTF validator $GLTF_VALIDATOR_VERSION with npm" >&2
    prefix="$HOME/.cache/sylva/gltf-validator-$GLTF_VALIDATOR_VERSION"
    mkdir -p "$prefix"
    npm install --silent --no-audit --no-fund --prefix "$prefix" "gltf-validator@$GLTF_VALIDATOR_VERSION" >&2
fi

cargo_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    cargo_args+=("$1")
    shift
done

# Sums "test result: ok. P passed; F failed" over a cargo test log.
count_passed() {
    grep -Eo 'test result: [a-zA-Z]+\. [0-9]+ passed' "$1" | awk '{ n += $4 } END { print n + 0 }'
}

# 1. The suite every clone passes.
log=$(mktemp)
suite_log=$(mktemp)
trap 'rm -f "$log" "$suite_log"' EXIT
if ! cargo test --workspace --locked "${cargo_args[@]}" "$@" 2>&1 | tee "$suite_log"; then
    echo "test.sh: FAILED: the workspace suite (see above)" >&2
    exit 1
fi
suite_passed=$(count_passed "$suite_log")

# 2. The corpus tests, by name ("name (in test file)").
if ! cargo test --workspace --locked "${cargo_args[@]}" -- --list --ignored >"$log" 2>&1; then
    cat "$log" >&2
    echo "test.sh: FAILED: listing the ignored tests failed" >&2
    exit 1
fi
corpus_tests=$(awk '/^ *Running / { file = ($2 == "unittests") ? $3 : $2 }
    /: test$/ && /(^|::)corpus_/ { sub(/: test$/, ""); print $0 " (in " file ")" }' "$log")
count=$(printf '%s' "$corpus_tests" | grep -c . || true)

# 3. The corpus.
corpus=""
if [ -n "${SYLVA_TREE_SPECS:-}" ]; then
    if [ ! -d "$SYLVA_TREE_SPECS" ]; then
        echo "test.sh: FAILED: SYLVA_TREE_SPECS=$SYLVA_TREE_SPECS is not a folder" >&2
        exit 1
    fi
    corpus=$SYLVA_TREE_SPECS
else
    dir=$(pwd -P)
    while :; do
        if [ -d "$dir/shared/data/tree-specs" ]; then
            corpus="$dir/shared/data/tree-specs"
            break
        fi
        [ "$dir" = / ] && break
        dir=$(dirname "$dir")
    done
fi

if [ -z "$corpus" ]; then
    echo
    echo "test.sh: SKIPPED $count test(s) that need the third-party tree-spec corpus, not found:"
    printf '%s\n' "$corpus_tests" | sed 's/^/  skipped: /'
    echo "test.sh: to run them, set SYLVA_TREE_SPECS to the corpus folder (shared/data/tree-specs)"
    echo "         or put shared/data/tree-specs beside the checkout (../shared/data/tree-specs)"
    if [ "${SYLVA_REQUIRE_CORPUS:-0}" = 1 ]; then
        echo "test.sh: FAILED: SYLVA_REQUIRE_CORPUS=1 and the tree-spec corpus was not found" >&2
        exit 1
    fi
    echo "test.sh: PASSED the workspace suite; SKIPPED $count corpus test(s) (no corpus; see above)"
    echo "tests: $suite_passed passed, 0 failed, $count skipped"
    exit 0
fi

# 4. The corpus tests on the corpus found; every one listed must have run and passed.
export SYLVA_TREE_SPECS="$corpus"
echo
echo "test.sh: running the $count corpus test(s) on $corpus"
if ! cargo test --workspace --locked "${cargo_args[@]}" -- --ignored corpus_ 2>&1 | tee "$log"; then
    echo "test.sh: FAILED: the corpus tests on $corpus (see above)" >&2
    exit 1
fi
ran=$(count_passed "$log")
if [ "$ran" -eq 0 ] || [ "$ran" -ne "$count" ]; then
    echo "test.sh: FAILED: the corpus run passed $ran test(s) where $count corpus test(s) are listed" >&2
    exit 1
fi
echo "test.sh: PASSED the workspace suite and all $ran corpus tests (corpus: $corpus)"
echo "tests: $((suite_passed + ran)) passed, 0 failed"
