#!/bin/bash
# bench.smoke.many: M over one and over two sessions and H, each with its raw floor, briefly; then
# the JSON lines must carry the burst times to the millisecond (H200's rounds take a few
# hundredths of a second: rounded to tenths they would read 0), and H's ratios to its floor.
set -euo pipefail
bench=$1
json=$(mktemp)
trap 'rm -f "$json"' EXIT
"$bench" --scenario M50,M50x2,H200 --duration 0.2 --warmup 0 --json "$json"
python3 - "$json" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
seen = set()
for r in lines:
    s = r["scenario"]
    if s.startswith("H"):
        for k in ("acquire_all_s", "release_all_s", "acquire_all_s_vs_raw_floor", "release_all_s_vs_raw_floor"):
            v = r.get(k)
            assert isinstance(v, (int, float)) and v > 0, f"{s}: {k} = {v!r}"
        seen.add((s, r["library"]))
    if s.startswith("M") and r["library"] == "zklock":
        v = r.get("first_round_s")
        assert isinstance(v, (int, float)) and v > 0, f"{s}: first_round_s = {v!r}"
        seen.add((s, "zklock"))
assert seen == {("M50", "zklock"), ("M50x2", "zklock"), ("H200", "zklock")}, seen
print("bench.smoke.many: burst times present:", sorted(seen))
PY
