#!/bin/bash
# bench.smoke.peer_bound: a peer that cannot drain W in --peer-bound reports what it reached. Kazoo
# with 2 000 waiters and a bound of 4 s: its line must say "incomplete", the bound, and how many
# acquisitions, contender threads and threads it reached, with the figures of the grants it made
# (the acquisitions in queue order, none overlapping). The worker's report at the bound must not
# wait behind its waiters (2 000 Python threads). Twice (--repeat 2): the medians' line keeps the
# peer's ratios to three places, as each run's line has them.
set -euo pipefail
bench=$1
json=$(mktemp)
trap 'rm -rf "$json"' EXIT
"$bench" --scenario W --waiters 2000 --duration 0.15 --warmup 0 --peers kazoo --peer-bound 4 \
  --repeat 2 --json "$json" > /dev/null
python3 - "$json" <<'PY'
import json, re, sys
def check(w):
    assert w["completed"] == 2000, w["completed"]
    k = w["peers"]["kazoo"]
    assert k["status"] == "incomplete", (k["status"], k.get("why"))
    m = re.search(r"bound of 4 s reached; reached: (\d+) acquisitions, (\d+) of 2000 contender threads started, (\d+) threads",
                  k["why"])
    assert m, k["why"]
    reached, started, threads = map(int, m.groups())
    assert 0 < reached < 2000 and reached == k["completed"], (reached, k["completed"])
    assert started == 2000 and threads >= 2000, (started, threads)
    assert k["overlaps"] == 0 and k["fifo_inversions"] == 0, k
    assert k["acquisitions_per_s"] > 0 and k["handoff_p50_us"] > 0, k
    print("bench.smoke.peer_bound: kazoo", k["why"])
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["scenario"], r.get("median_of")) for r in lines] == [("W2000", None)] * 2 + [("W2000", 2)], lines
for w in lines[:2]:
    check(w)
med = lines[2]["peers"]["kazoo"]
assert med["status"] == "incomplete", med
for name, v in med["zklock_ratio"].items():
    runs = [w["peers"]["kazoo"]["zklock_ratio"][name] for w in lines[:2]]
    if v is None or None in runs:
        continue
    assert abs(v - sum(runs) / 2) <= 0.0006, (name, v, runs)  # the median of two, to three places
print("bench.smoke.peer_bound: median ratios", med["zklock_ratio"])
PY
