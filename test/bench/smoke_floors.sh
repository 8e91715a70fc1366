#!/bin/bash
# bench.smoke.floors: W with 200 waiters and its floors, once; then W's JSON line must say what
# each floor listed and what the server's collector used: every waiter of the plain recipe lists
# the queue once, and once more when its predecessor goes (its own node is in each listing), and
# the collector's CPU is a part of the server's. --plot's write-bound.svg must show W's writes and
# the bound as the line has them (check_plots.py).
set -euo pipefail
bench=$1
json=$(mktemp)
plots=$(mktemp -d)
trap 'rm -rf "$json" "$plots"' EXIT
"$bench" --scenario W --waiters 200 --duration 0.2 --warmup 0 --json "$json" --plot "$plots"
python3 - "$json" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
w = [r for r in lines if r["scenario"] == "W200"]
assert len(w) == 1, [r["scenario"] for r in lines]
w = w[0]
assert 0 < w["rss_start_mb"] <= w["peak_rss_mb"], (w["rss_start_mb"], w["peak_rss_mb"])
assert 0 <= w["server_gc_cpu_s"] <= w["server_cpu_s"], (w["server_gc_cpu_s"], w["server_cpu_s"])
for side in ("session_layer", "raw"):
    f = w["floors"][side]
    names = f["names_listed_per_acquisition"]
    assert 1 <= names <= 2 * 200, (side, names)
    assert 0 <= f["server_gc_cpu_s"] <= f["server_cpu_s"], (side, f)
print("bench.smoke.floors:", w["floors"])
PY
# --plot: the summary plot shows what the lines say.
python3 "$(dirname "$0")/check_plots.py" write-bound "$json" "$plots"
