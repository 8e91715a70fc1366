#!/bin/bash
# bench.smoke.peers: U, C64 and W with 50 waiters, briefly, with --peers curator,kazoo. Each
# scenario's line must carry both peers' figures, computed from their acquisitions: every peer
# completed, acquired, kept mutual exclusion (0 overlaps), had its inversions counted, ran a thread
# per contender, and zklock's ratio to it is there. --plot's peers-*.svg must show what the lines say
# (check_plots.py).
set -euo pipefail
bench=$1
json=$(mktemp)
plots=$(mktemp -d)
trap 'rm -rf "$json" "$plots"' EXIT
"$bench" --scenario U,C64,W --waiters 50 --duration 0.15 --warmup 0 --peers curator,kazoo --json "$json" --plot "$plots" > /dev/null
python3 - "$json" <<'PY'
import json, sys
lines = {r["scenario"]: r for r in map(json.loads, open(sys.argv[1]))}
assert set(lines) == {"U", "C64", "W50"}, sorted(lines)
for name, line in lines.items():
    for peer in ("curator", "kazoo"):
        p = line["peers"][peer]
        assert p["status"] == "ok", (name, peer, p.get("why"))
        rate = p["cycles_per_s" if name == "U" else "acquisitions_per_s"]
        assert rate > 0, (name, peer, rate)
        assert p["overlaps"] == 0, (name, peer, p["overlaps"])
        assert p["peak_rss_mb"] > 0 and p["client_cpu_s"] >= 0, (name, peer, p)
        assert p["threads"] >= line["contenders"], (name, peer, p["threads"])
        ratio = p["zklock_ratio"]["cycles_per_s" if name == "U" else "acquisitions_per_s"]
        assert ratio > 0, (name, peer, ratio)
        if name != "U":
            assert isinstance(p["fifo_inversions"], int) and p["fifo_inversions"] >= 0, (name, peer, p)
            assert 0 < p["handoff_p50_us"] <= p.get("handoff_p99_us", p["handoff_p50_us"]), (name, peer, p)
        if name == "C64":
            assert 0 < p["jain_index"] <= 1 and p["min_count"] >= 1, (name, peer, p)
        if name == "W50":
            assert p["completed"] == 50, (name, peer, p["completed"])
        print(name, peer, rate, "inversions", p.get("fifo_inversions"), "threads", p["threads"])
PY
python3 "$(dirname "$0")/check_plots.py" peers "$json" "$plots"
