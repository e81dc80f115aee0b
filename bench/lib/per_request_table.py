"""The table of a callgrind benchmark (request-instructions.sh,
locked-instructions.sh): RAW's rows are `label<TAB>test<TAB>value`, and
optionally `<TAB>places` (where the count comes from). Writes OUT as
JSON, one cell per test and label with the value under FIELD, and prints
a Markdown table, tests down, labels across, then the places.

    per_request_table.py RAW OUT N VARIANTS UNIT FIELD
"""
import datetime
import json
import platform
import sys

raw, out, n, variants, unit, field = sys.argv[1:]
rows = [l.rstrip("\n").split("\t") for l in open(raw)]
labels = list(dict.fromkeys(r[0] for r in rows))
tests = list(dict.fromkeys(r[1] for r in rows))
text = {(r[1], r[0]): r[2] for r in rows}
places = {(r[1], r[0]): r[3] for r in rows if len(r) > 3}


def value(s):
    return int(s) if s.lstrip("-").isdigit() else float(s)


cells = []
for t in tests:
    for l in labels:
        cell = {"test": t, "label": l, field: value(text[(t, l)])}
        if (t, l) in places:
            cell["top_places"] = places[(t, l)]
        cells.append(cell)
json.dump({
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "kernel": platform.release(),
    "requests": int(n),
    "variants": variants,
    "unit": unit,
    "cells": cells,
}, open(out, "w"), indent=1)
print("| test | " + " | ".join(labels) + " |")
print("|---|" + "---|" * len(labels))
for t in tests:
    print(f"| {t} | " + " | ".join(text[(t, l)] for l in labels) + " |")
for t in tests:
    for l in labels:
        if (t, l) in places:
            print(f"{t} {l}: {places[(t, l)]}")
print(f"JSON: {out}")
