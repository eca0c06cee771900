"""Cross-check the moment-series reference against quadrature and the exact integer formula."""

import mpmath as mp
from reference import int_log_a, moment_log_a, quad_log_a

worst = 0
for q, sigma, alpha in [
    (0.01, 1e3, 1.5),
    (0.3, 2e3, 10.5),
    (0.9, 1e3, 3.3),
    (1e-6, 1e3, 2.7),
    (0.5, 5e3, 100.5),
    (0.999999999, 1e4, 1.1),
    (0.02, 1e5, 7.25),
]:
    a = moment_log_a(q, sigma, alpha)
    b = quad_log_a(q, sigma, alpha)
    r = abs(a / b - 1)
    worst = max(worst, r)
    print("quad", q, sigma, alpha, mp.nstr(a, 20), mp.nstr(b, 20), mp.nstr(r, 3))
for q, sigma, n in [(0.01, 1e3, 2), (0.7, 1e6, 17), (1e-9, 1e8, 3), (0.5, 1e12, 1000)]:
    a = moment_log_a(q, sigma, n)
    b = int_log_a(q, sigma, n)
    r = abs(a / b - 1)
    worst = max(worst, r)
    print("int", q, sigma, n, mp.nstr(a, 20), mp.nstr(b, 20), mp.nstr(r, 3))
print("worst relative disagreement", mp.nstr(worst, 3))
