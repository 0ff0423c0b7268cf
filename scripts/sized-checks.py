#!/usr/bin/env python3
"""The four checks of the sized hit-ratio suite, from `larder-bench --json --sized hitratio` lines
(stdin or files): geometric means of larder-recommended against larder-lru (objects, bytes), the
worst cell against LRU on either measure, and the worst objects against the best online policy."""
import fileinput, json, math

cells = {}
for line in fileinput.input():
    line = line.strip()
    if not line.startswith("{"):
        continue
    row = json.loads(line)
    if row.get("suite") != "hitratio-sized":
        continue
    cells.setdefault((row["trace"], row["fraction"]), {})[row["impl"]] = row

lo = lb = 0.0
worst_lru = (0.0, "")
worst_best = (0.0, "")
for (trace, fraction), rows in sorted(cells.items()):
    rec, lru, best = rows["larder-recommended"], rows["larder-lru"], rows.get("best-online")
    ro = rec["object_miss_ratio"] / lru["object_miss_ratio"]
    rb = rec["byte_miss_ratio"] / lru["byte_miss_ratio"]
    rbest = rec["object_miss_ratio"] / best["object_miss_ratio"] if best else float("nan")
    name = f"{trace} f={fraction}"
    print(f"{name:28} objects {ro:.3f} bytes {rb:.3f} vs-best {rbest:.3f} [{best['policy'] if best else '-'}]")
    lo += math.log(ro)
    lb += math.log(rb)
    worst_lru = max(worst_lru, (max(ro, rb), name))
    if best:
        worst_best = max(worst_best, (rbest, name))
n = len(cells)
go, gb = math.exp(lo / n), math.exp(lb / n)
checks = [
    ("objects geomean vs LRU", go, 0.88),
    ("bytes geomean vs LRU", gb, 0.90),
    ("worst cell vs LRU", worst_lru[0], 1.01),
    ("worst objects vs best online", worst_best[0], 1.02),
]
for label, value, target in checks:
    print(f"{label:30} {value:.4f} (target <= {target}) {'met' if value <= target else 'MISSED'}")
print(f"worst cells: vs LRU {worst_lru[1]}, vs best {worst_best[1]}")
