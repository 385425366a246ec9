#!/usr/bin/env bash
# Sourced by run.sh and test.sh: makes sure this machine can build Sylva, installing what is
# missing (as root on Debian 12), and picks a build folder that survives fresh clones.
set -euo pipefail

need_root() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "sylva setup: '$1' is missing and installing it needs root (run as root or install it yourself)" >&2
        exit 1
    fi
}

apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        need_root "${missing[*]}"
        echo "sylva setup: installing ${missing[*]}" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

# Rust: the toolchain from rustup (Debian's cargo is too old for the dependencies).
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi
if ! command -v cargo >/dev/null 2>&1; then
    apt_install curl ca-certificates build-essential
    echo "sylva setup: installing the Rust toolchain with rustup" >&2
    curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >/dev/null
    # shellcheck disable=SC1091
    . "$HOME/.cargo/env"
fi
# The formatter and linter scripts/check.sh runs.
if command -v rustup >/dev/null 2>&1; then
    for component in rustfmt clippy; do
        if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
            echo "sylva setup: adding the Rust component $component" >&2
            rustup component add "$component" >/dev/null
        fi
    done
fi
if ! command -v cc >/dev/null 2>&1; then
    apt_install build-essential
fi

# The renderer: shaderc's C++ compiler core builds from source (cmake, ninja, python3, g++);
# Vulkan runs on Mesa's lavapipe when there is no GPU, checked by the Khronos validation
# layer in the tests; the viewer's window needs the X11 client libraries (or Wayland's, loaded
# when there is a Wayland display), and its tests run it under Xvfb, driving it with xdotool
# (weston, for its Wayland test, comes with scripts/test.sh).
apt_install build-essential cmake ninja-build python3 \
    libvulkan1 mesa-vulkan-drivers vulkan-validationlayers \
    libx11-6 libx11-xcb1 libxcursor1 libxrandr2 libxi6 libxkbcommon-x11-0 \
    libwayland-client0 libwayland-cursor0 libxkbcommon0 \
    xvfb xauth xdotool

# Build outputs outside the clone, so a fresh clone reuses earlier builds.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sylva/target}"
mkdir -p "$CARGO_TARGET_DIR"
