#!/usr/bin/env python3
"""The layers of src/ and which may include which, followed through every header (transitively).

    core/     errors, handlers, deadlines, logs, metrics     -> api
    port/     what an operation may ask of ZooKeeper         -> core, api
    bridge/   the port on the C client                       -> port, core, api
    queue/    the queue protocol, sans-io                    -> core, api
    recipes/  what differs between recipes                   -> queue, core, api
    ops/      the operations users start                     -> everything but bridge/

"api" is the public headers a session needs (include/zklock: session, lease, types, errors,
config, metrics, and their detail/ helpers). The public headers of the queue (detail/path,
listing, acquire_fsm, queue_policy, recipe, acquire_fwd) count as queue/, the recipes' public
headers (basic_lock, mutex, election, ...) as ops/. The C client's headers (zookeeper.h, and
bridge/zk_client.h which names it) belong to the bridge alone.

Usage: layers.py SOURCE_DIR. Prints every forbidden include with the chain that brings it in;
exits 1 if there is one.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)

QUEUE_API = {"path.hpp", "listing.hpp", "acquire_fsm.hpp", "queue_policy.hpp", "recipe.hpp", "acquire_fwd.hpp"}
OPS_API = {"basic_lock.hpp", "mutex.hpp", "shared_mutex.hpp", "semaphore.hpp", "election.hpp",
           "multi_lock.hpp", "queue.hpp", "zklock.hpp"}
ALLOWED = {
    "core": {"core", "api"},
    "port": {"port", "core", "api"},
    "bridge": {"bridge", "port", "core", "api", "client"},
    "queue": {"queue", "core", "api"},
    "recipes": {"recipes", "queue", "core", "api"},
    "ops": {"ops", "recipes", "queue", "port", "core", "api"},
}


def layer_of(rel):
    """rel: a path relative to ROOT ('src/...', 'include/zklock/...') or a C client header."""
    if rel in ("<zookeeper.h>", "<zookeeper/zookeeper.h>", "src/bridge/zk_client.h"):
        return "client"
    parts = rel.split("/")
    if parts[0] == "src":
        return parts[1]
    if parts[0] == "include":
        name = parts[-1]
        if parts[-2] == "detail" and name in QUEUE_API:
            return "queue"
        if parts[-2] == "zklock" and name in OPS_API:
            return "ops"
        return "api"
    return None


def resolve(src_file, kind, name):
    if kind == '"':
        for base in (os.path.dirname(src_file), os.path.join(ROOT, "src")):
            p = os.path.normpath(os.path.join(base, name))
            if os.path.isfile(p):
                return os.path.relpath(p, ROOT)
        return None
    if name.startswith("zklock/"):
        p = os.path.join(ROOT, "include", name)
        return os.path.relpath(p, ROOT) if os.path.isfile(p) else None
    if name in ("zookeeper.h", "zookeeper/zookeeper.h"):
        return "<" + name + ">"
    return None


cache = {}


def includes(rel):
    if rel in cache:
        return cache[rel]
    out = []
    path = os.path.join(ROOT, rel)
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            for kind, name in INCLUDE_RE.findall(f.read()):
                r = resolve(path, kind, name)
                if r:
                    out.append(r)
    cache[rel] = out
    return out


def closure(rel):
    """Every file rel brings in, each with the chain it came by."""
    seen = {rel: [rel]}
    stack = [rel]
    while stack:
        cur = stack.pop()
        for dep in includes(cur):
            if dep not in seen:
                seen[dep] = seen[cur] + [dep]
                stack.append(dep)
    return seen


def main():
    bad = 0
    files = 0
    for layer in ALLOWED:
        d = os.path.join(ROOT, "src", layer)
        if not os.path.isdir(d):
            print(f"layers: no folder src/{layer}")
            return 1
        for name in sorted(os.listdir(d)):
            if not name.endswith((".cpp", ".hpp", ".h")):
                continue
            rel = f"src/{layer}/{name}"
            files += 1
            for dep, chain in sorted(closure(rel).items()):
                dl = layer_of(dep)
                if dl is None or dl == layer or dl in ALLOWED[layer]:
                    continue
                bad += 1
                print(f"layers: {rel} ({layer}) reaches {dep} ({dl}): " + " -> ".join(chain))
    print(f"layers: {files} files checked, {bad} forbidden includes")
    return 1 if bad else 0


sys.exit(main())
