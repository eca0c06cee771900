import json
import sys

a, b = (json.load(open(p))["res"] for p in sys.argv[1:3])
nd = 0
nerr = 0
for i, (x, y) in enumerate(zip(a, b, strict=False)):
    nerr += any(str(v).startswith("ERR") for v in x.values())
    if x != y:
        nd += 1
        if nd <= 3:
            print(
                "DIFF case",
                i,
                {k: (x.get(k), y.get(k)) for k in ("q", "sig", "o")},
                [k for k in x if x[k] != y.get(k)],
            )
print(sys.argv[1:3], "cases", len(a), "differing", nd, "with errors", nerr)
