"""Claims of Jiang, Hasan, Saadati, Balu, Liu, Sarkar, *Balancing utility and privacy: dynamically
private SGD with random projection* (D2P2-SGD), arXiv 2509.09485.

Convention (stated in the paper's proof of Lemma 5): per-sample gradients are normalised to norm
<= 1, so the summed minibatch gradient has sensitivity 1 and sigma_eps is the noise multiplier of
the summed quantity; sigma_{eps,k} = sigma_eps / sqrt(k) (variance sigma^2/k) in the text and proof,
sigma^2/sqrt(k) in Table 3. Sampling is read as Poisson with rate q = B/n (add/remove adjacency,
the project's convention); the paper's "without replacement" with replace-one adjacency can only
be less private, so a violation under our reading is a violation under theirs.

One module per group of claims; ``CLAIMS`` lists them in the paper's order.
"""

from __future__ import annotations

from verification.claims.d2p2 import (
    aux_lemmas,
    comparisons,
    convex,
    nonconvex,
    privacy_lemmas,
    privacy_theorem,
    projection,
    reductions,
)
from verification.claims.d2p2._common import PAPER
from verification.claims.d2p2.privacy_lemmas import (
    lemma5_domain,
    lemma5_exact_ratio,
    lemma5_log_rdp_integer,
)

CLAIMS = [
    *aux_lemmas.CLAIMS[:2],
    *privacy_lemmas.CLAIMS[:1],
    *aux_lemmas.CLAIMS[2:3],
    *privacy_lemmas.CLAIMS[1:],
    *privacy_theorem.CLAIMS,
    *projection.CLAIMS,
    *convex.CLAIMS,
    *nonconvex.CLAIMS,
    *comparisons.CLAIMS,
    *aux_lemmas.CLAIMS[3:],
    *reductions.CLAIMS,
]

__all__ = ["CLAIMS", "PAPER", "lemma5_domain", "lemma5_exact_ratio", "lemma5_log_rdp_integer"]
