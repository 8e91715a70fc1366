#!/usr/bin/env python3
"""Checks the summary plots of zklock_bench --plot against the JSON lines of the same run.

    check_plots.py write-bound|listings|threads|peers JSON_FILE PLOT_DIR

With --repeat 1 a plotted median is the run's own figure, so every bar must carry exactly the
value of its line (data-value), stand on the axis with a positive height, and the plot must have
a bar for every line that has the figure, and none besides.
"""
import json
import math
import os
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def bars(path):
    root = ET.parse(path).getroot()
    found = {}
    for r in root.iter(SVG + "rect"):
        if r.get("class") != "bar":
            continue
        key = (r.get("data-series"), r.get("data-category"))
        assert key not in found, f"{path}: two bars for {key}"
        assert float(r.get("height")) > 0, f"{path}: {key} has no height"
        found[key] = float(r.get("data-value"))
    return found


def same(plotted, expected):
    return math.isclose(plotted, expected, rel_tol=1e-6, abs_tol=1e-9)


def check(path, want):
    got = bars(path)
    assert set(got) == set(want), f"{path}: bars {sorted(got)}, expected {sorted(want)}"
    for key, value in want.items():
        assert same(got[key], value), f"{path}: {key} plotted {got[key]}, the line says {value}"
    print(f"{os.path.basename(path)}: {len(got)} bars, as the JSON lines say")


def main():
    mode, json_file, plot_dir = sys.argv[1:4]
    lines = [json.loads(l) for l in open(json_file) if l.strip()]
    want = {}
    if mode == "write-bound":
        for r in lines:
            wb = r.get("server_write_bound")
            if not isinstance(wb, dict) or "lock_writes_per_s" not in wb:
                continue
            want[("the server's write bound (a pipelined writer)", r["scenario"])] = wb["writes_per_s"]
            want[("the lock: two writes per acquisition", r["scenario"])] = wb["lock_writes_per_s"]
        assert want, "no line has the server's write bound"
        check(os.path.join(plot_dir, "write-bound.svg"), want)
    elif mode == "listings":
        figures = {"listing_p50_us": "time per listing (p50)", "client_cpu_us_per_listing": "client CPU per listing",
                   "listings_per_s": "listings/s"}
        for r in lines:
            if r["scenario"][0] != "L" or not r["scenario"][1:].isdigit():
                continue
            for f, label in figures.items():
                v = r.get(f + "_vs_raw_floor")
                if isinstance(v, (int, float)):
                    want[(r["scenario"], label)] = v
        assert want, "no L<N> line with ratios to the raw floor"
        check(os.path.join(plot_dir, "listings.svg"), want)
    elif mode == "threads":
        by_plot = {}
        for r in lines:
            if not r["scenario"].endswith(" threads"):
                continue
            name = r["scenario"][: -len(" threads")]
            n = r["io_threads"]
            series = "an io_context per thread" if r["io_context_per_thread"] else "one io_context"
            category = f"{n} thread" + ("" if n == 1 else "s")
            by_plot.setdefault(name, {})[(series, category)] = r["acquisitions_per_s"]
        assert by_plot, "no --threads line"
        for name, w in by_plot.items():
            check(os.path.join(plot_dir, f"threads-{name}.svg"), w)
    elif mode == "peers":
        series = {"zklock": "zklock (one thread)", "curator": "Curator InterProcessMutex (a thread per contender)",
                  "kazoo": "Kazoo Lock (a thread per contender)"}
        plots = {"peers-throughput": ("cycles_per_s", "acquisitions_per_s"), "peers-handoff": ("acquire_p50_us", "handoff_p50_us"),
                 "peers-memory": ("peak_rss_mb", "peak_rss_mb")}
        for plot, (u_figure, figure) in plots.items():
            want = {}
            for r in lines:
                if "peers" not in r:
                    continue
                f = u_figure if r["scenario"] == "U" else figure
                if f in r:
                    want[(series["zklock"], r["scenario"])] = r[f]
                for peer, p in r["peers"].items():
                    if p["status"] == "ok":  # a peer that did not complete has no bar
                        want[(series[peer], r["scenario"])] = p[f]
            assert want, "no line with peers"
            check(os.path.join(plot_dir, plot + ".svg"), want)
    else:
        sys.exit(f"check_plots.py: unknown mode {mode}")


main()
