#!/bin/bash
# bench.smoke.many: M over one and over two sessions, H and L, each with its raw floor, briefly;
# then the JSON lines must carry the burst times to the millisecond (H200's rounds take a few
# hundredths of a second: rounded to tenths they would read 0), H's ratios to its floor, and L's
# listings of all 2000 names (each listing is checked for them: a short one is a failure);
# --plot's listings.svg must show L's ratios as the line has them (check_plots.py).
set -euo pipefail
bench=$1
json=$(mktemp)
plots=$(mktemp -d)
trap 'rm -rf "$json" "$plots"' EXIT
"$bench" --scenario M50,M50x2,H200,L2000 --duration 0.2 --warmup 0 --json "$json" --plot "$plots"
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
    if s.startswith("L"):
        for k in ("listings_per_s", "client_cpu_ns_per_name", "listings_per_s_vs_raw_floor"):
            v = r.get(k)
            assert isinstance(v, (int, float)) and v > 0, f"{s}: {k} = {v!r}"
        per = r["names_per_s"] / r["listings_per_s"]
        assert abs(per - 2000) < 1, f"{s}: {per} names per listing"
        seen.add((s, r["library"]))
assert seen == {("M50", "zklock"), ("M50x2", "zklock"), ("H200", "zklock"), ("L2000", "zklock")}, seen
print("bench.smoke.many: burst times present:", sorted(seen))
PY
# --plot: the summary plot shows what the lines say.
python3 "$(dirname "$0")/check_plots.py" listings "$json" "$plots"
