import sys

import numpy as np

a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
d = (a.view(np.int64) != b.view(np.int64)) & ~(np.isnan(a) & np.isnan(b))
print("values", a.size, "differ", int(d.sum()))
if d.any():
    ulps = np.abs(a[d].view(np.int64) - b[d].view(np.int64))
    rel = (b[d] - a[d]) / np.abs(a[d])
    print(
        "max ulps",
        ulps.max(),
        "max |rel|",
        np.abs(rel).max(),
        "new lower count",
        int((b[d] < a[d]).sum()),
        "max new-lower rel",
        float((-rel[b[d] < a[d]]).max()) if (b[d] < a[d]).any() else 0,
    )
    idx = np.argwhere(d)[:8]
    for i, j in idx:
        print(" row", i, "col", j, a[i, j], b[i, j])
