#!/bin/bash
# bench.smoke.threads: C64 and M50x2 with their sessions on 1 and 2 worker threads, one io_context
# and one per thread, briefly; then the JSON lines must hold one line per scenario and layout, each
# with its throughput, its client CPU per acquisition and its ratio to the one-thread line, and
# --plot's threads-<scenario>.svg must show each line's throughput (check_plots.py).
set -euo pipefail
bench=$1
json=$(mktemp)
plots=$(mktemp -d)
trap 'rm -rf "$json" "$plots"' EXIT
"$bench" --scenario C64,M50x2 --threads 1,2 --contexts both --duration 0.2 --warmup 0 --windows 1 --json "$json" --plot "$plots"
python3 - "$json" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
seen = set()
for r in lines:
    s, n, k = r["scenario"], r["io_threads"], r["io_contexts"]
    assert s in ("C64 threads", "M50x2 threads"), s
    assert k in (1, n), (s, n, k)
    for f in ("acquisitions_per_s", "client_cpu_us_per_acquisition", "acquisitions_vs_one_thread"):
        v = r.get(f)
        assert isinstance(v, (int, float)) and v > 0, f"{s} {n}/{k}: {f} = {v!r}"
    if n == 1:
        assert r["acquisitions_vs_one_thread"] == 1, r["acquisitions_vs_one_thread"]
    assert r["raw_floor_threads"] == 1
    if s == "C64 threads":
        assert r["fifo_inversions"] == 0, r["fifo_inversions"]
    seen.add((s, n, k))
want = {(s, n, k) for s in ("C64 threads", "M50x2 threads") for n, k in ((1, 1), (2, 1), (2, 2))}
assert seen == want, seen
print("bench.smoke.threads: lines for", sorted(seen))
PY
# --plot: the summary plot shows what the lines say.
python3 "$(dirname "$0")/check_plots.py" threads "$json" "$plots"
