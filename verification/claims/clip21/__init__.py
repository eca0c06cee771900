"""Claims of Islamov, Horváth, Lucchi, Richtárik, Gorbunov, *Double momentum and error feedback
for clipping with fast rates and differential privacy* (arXiv 2502.11682).

The rendering lost every formula; the algorithms are taken from docs/algorithms.md and the
readings of the lost statements are given in each claim's ``notes``. One module per group:

* :mod:`._convergence` -- Example 1, Theorem 1, Theorem 2 (runs of the method);
* :mod:`._privacy` -- Corollary 1's privacy half (reconstructed noise, never deciding);
* :mod:`._reductions` -- the checkable parts of lost statements (heavy ball, Clip21-SGD, eq. (8)),
  and the project's optimizer against the restored equations;
* :mod:`._invariants` -- the message-norm bound Cor. 1 rests on, and eq. (16);
* :mod:`._lost` -- every other numbered statement, registered from its surviving words.
"""

from verification.claims.clip21._convergence import CLAIMS as _CONVERGENCE
from verification.claims.clip21._convergence import example1_domain, example1_exact_step
from verification.claims.clip21._invariants import CLAIMS as _INVARIANTS
from verification.claims.clip21._invariants import eq16_gap, message_norm_ratio
from verification.claims.clip21._lost import CLAIMS as _LOST
from verification.claims.clip21._lost import clipped_minibatch_bias
from verification.claims.clip21._privacy import CLAIMS as _PRIVACY
from verification.claims.clip21._privacy import (
    clip21_paper_sigma,
    cor1_domain,
    cor1_exact,
    cor1_violation_ratio,
)
from verification.claims.clip21._reductions import CLAIMS as _REDUCTIONS
from verification.claims.clip21._reductions import (
    alg3_replay,
    clip21_deviation,
    clip21_gd,
    eq8_factor,
    heavy_ball_deviation,
    polyak_heavy_ball,
)

PAPER = "clip21"


def _ordered():
    """Example 1 and Theorem 1 first, then the reductions and lemmas, the theorems, Corollary 1."""
    lost = {c.id: c for c in _LOST}
    conv = {c.id: c for c in _CONVERGENCE}
    out = [conv["clip21.example1"], conv["clip21.thm1"], lost.pop("clip21.thm1-part2")]
    out += _REDUCTIONS + _INVARIANTS
    out += [c for cid, c in lost.items() if cid.startswith("clip21.lemma")]
    out += [conv["clip21.thm2"], lost.pop("clip21.thm5"), lost.pop("clip21.thm3"), lost.pop("clip21.thm4")]
    out += _PRIVACY
    out += [c for cid, c in lost.items() if not cid.startswith("clip21.lemma")]
    return out


CLAIMS = _ordered()

__all__ = [
    "CLAIMS",
    "PAPER",
    "alg3_replay",
    "clip21_deviation",
    "clip21_gd",
    "clip21_paper_sigma",
    "clipped_minibatch_bias",
    "cor1_domain",
    "cor1_exact",
    "cor1_violation_ratio",
    "eq16_gap",
    "eq8_factor",
    "example1_domain",
    "example1_exact_step",
    "heavy_ball_deviation",
    "message_norm_ratio",
    "polyak_heavy_ball",
]
