"""PNG of a ``dptheory run`` result (matplotlib imported on use), written atomically."""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Any

import numpy as np

from accounting.errors import InvalidParameter

if TYPE_CHECKING:
    from dptheory.runner import RunResult


def check_plot_path(path: str) -> None:
    """Fail early (before a long run) if the PNG cannot be written there."""
    if not path.lower().endswith(".png"):
        raise InvalidParameter("--plot", f"must be a .png path (got {path!r})")
    from dptheory.paths import probe_writable_dir

    if os.path.isdir(path):
        raise InvalidParameter("--plot", f"is a directory: {path}")
    probe_writable_dir("--plot", os.path.dirname(os.path.abspath(path)))


def save_figure_atomic(fig: Any, path: str, **kw: Any) -> None:
    """Write to a temporary file in the same directory, then rename: no half-written PNG."""
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".png", dir=d)
    os.close(fd)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a figure should be readable like any file
        fig.savefig(tmp, format="png", **kw)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def plot_result(result: RunResult, path: str) -> None:
    """Trajectories of every seed: x_t (1-D) or f - f*, and ||grad f||, with x* / fixed point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = result.settings
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    one_d = result.runs and "x" in result.runs[0].trajectory
    for r in result.runs:
        tr = r.trajectory
        if one_d:
            axes[0].plot(tr["step"][: len(tr["x"])], tr["x"], lw=1, alpha=0.8)
        else:
            axes[0].semilogy(tr["step"], np.maximum(tr["suboptimality"], 1e-16), lw=1, alpha=0.8)
        axes[1].semilogy(tr["step"], np.maximum(tr["grad_norm"], 1e-16), lw=1, alpha=0.8)
    if one_d:
        axes[0].axhline(float(result.optimum[0]), color="k", ls="--", lw=1, label="x* (optimum)")
        fp = result.fixed_point
        if fp is not None:
            lo, hi = float(fp.lo[0]), float(fp.hi[0])
            if hi - lo > 1e-9:
                axes[0].axhspan(lo, hi, color="tab:red", alpha=0.15, label="clipped fixed-point set")
            else:
                axes[0].axhline(lo, color="tab:red", ls=":", lw=1.5, label="clipped fixed point")
        axes[0].set_ylabel("x_t")
        axes[0].legend(loc="best", fontsize=8)
    else:
        axes[0].set_ylabel("f(x_t) - f*")
    axes[1].set_ylabel("||grad f(x_t)||")
    for ax in axes:
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    priv = (
        f"z={result.privacy.get('noise_multiplier', 0):.3g}"
        if result.privacy.get("private")
        else "non-private"
    )
    fig.suptitle(f"{s.algo} on {s.problem} (lr={s.lr:g}, q={s.sample_rate:g}, {priv}, {s.seeds} seed(s))")
    fig.tight_layout()
    save_figure_atomic(fig, path, dpi=110)
    plt.close(fig)
