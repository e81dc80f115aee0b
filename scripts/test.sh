#!/usr/bin/env bash
# Runs every test granola has, on a fresh machine with only rustup/cargo.
# Installs what it needs (rustfmt, clippy, nightly miri, cargo-fuzz) first.
#
#   ./scripts/test.sh            everything (what CI runs)
#   SKIP_MIRI=1 SKIP_FUZZ=1 ./scripts/test.sh   the quick subset
#   FUZZ_SECONDS=300 ./scripts/test.sh          a longer fuzz smoke run
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
FUZZ_SECONDS="${FUZZ_SECONDS:-30}"

step "toolchain components"
rustup component add rustfmt clippy >/dev/null
if [ -z "${SKIP_MIRI:-}" ] || [ -z "${SKIP_FUZZ:-}" ]; then
    rustup toolchain install nightly --profile minimal >/dev/null 2>&1 || true
fi
if [ -z "${SKIP_MIRI:-}" ]; then
    rustup component add --toolchain nightly miri rust-src >/dev/null
fi
if [ -z "${SKIP_FUZZ:-}" ] && ! command -v cargo-fuzz >/dev/null; then
    cargo install cargo-fuzz --locked --version 0.13.2
fi

step "cargo fmt --check"
cargo fmt --all -- --check
(cd fuzz && cargo fmt -- --check)

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test"
cargo test --workspace --locked

step "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked

if [ -z "${SKIP_MIRI:-}" ]; then
    step "miri: pool, Buf and wire (crates/granola)"
    # A separate target dir keeps miri's artefacts from evicting the normal
    # build's.
    CARGO_TARGET_DIR=target/miri cargo +nightly miri test -p granola --locked
fi

if [ -z "${SKIP_FUZZ:-}" ]; then
    step "fuzz smoke: decode for ${FUZZ_SECONDS}s"
    (cd fuzz && cargo +nightly fuzz run decode -- -max_total_time="${FUZZ_SECONDS}")
fi

step "all tests passed"
