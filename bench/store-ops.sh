#!/usr/bin/env bash
# The store's INCR, SADD and GET paths in-process (bench/store-ops: no
# network, no protocol), built against the granola-kv of each revision
# given, run alternately on CPU 0, REPS rounds each: nanoseconds per
# operation, the best of 7 rounds of 5 M operations per run.
#
#   bench/store-ops.sh before=c4c7c3a after=HEAD
#       -> bench/results/store-ops-DATE.json (one line per run) and a table
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
OUT=${OUT:-bench/results/store-ops-$(date -u +%F).json}
TMP=$(mktemp -d)
trap 'for d in "$TMP"/tree-*; do git worktree remove --force "$d" 2>/dev/null || true; done; rm -rf "$TMP"' EXIT
for v in "$@"; do
    label=${v%%=*} rev=${v#*=}
    git worktree add -q --detach "$TMP/tree-$label" "$rev"
    # The program is this checkout's, whatever the revision's store.
    rm -rf "$TMP/tree-$label/bench/store-ops"
    cp -r bench/store-ops "$TMP/tree-$label/bench/store-ops"
    cp Cargo.lock "$TMP/tree-$label/bench/store-ops/Cargo.lock"
    (cd "$TMP/tree-$label/bench/store-ops" &&
        CARGO_TARGET_DIR="$TMP/target-$label" cargo build --release -q)
    cp "$TMP/target-$label/release/store-ops" "$TMP/bin-$label"
done
: >"$OUT"
for rep in $(seq "$REPS"); do
    for v in "$@"; do
        label=${v%%=*}
        line=$(taskset -c 0 "$TMP/bin-$label")
        echo "{\"variant\":\"$label\",\"rev\":\"$(git rev-parse --short "${v#*=}")\",\"rep\":$rep,${line#\{}" >>"$OUT"
    done
done
python3 - "$OUT" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
variants = list(dict.fromkeys(r["variant"] for r in rows))
print("| op | " + " | ".join(variants) + " |")
print("|---|" + "---|" * len(variants))
for op in ("incr", "sadd", "get"):
    cells = []
    for v in variants:
        xs = [r[f"{op}_ns"] for r in rows if r["variant"] == v]
        cells.append(f"{statistics.median(xs):.1f} ({min(xs):.1f}–{max(xs):.1f})")
    print(f"| {op} ns | " + " | ".join(cells) + " |")
print(f"JSON: {sys.argv[1]}")
PY
