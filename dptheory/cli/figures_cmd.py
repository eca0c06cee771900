"""``dptheory figures [--out DIR] [--quick]``: regenerate the README's figures (PNG, atomic writes).

Without ``--out`` the figures go to a new temporary folder (its paths are printed): running the
command in a checkout never rewrites the tracked ``figures/``; ``--out figures`` does, on purpose."""

from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser(
        "figures",
        help="regenerate the README figures (into a new temporary folder unless --out DIR)",
        description=(
            "Regenerate: dicesgd_b1_bias.png (clipping bias vs C for DPSGD-GC and DiceSGD on dicesgd-b1), "
            "clip21_methods.png (Clip-GD, Clip21-GD, Clip21-SGD2M on clip21-example1 and "
            "stochastic-quadratic), epsilon_schedules.png (epsilon vs steps for constant, inv-k, "
            "inv-sqrt-k), dicesgd_gap_heatmap.png (DiceSGD certified/audit eps over G/C1 x C2/C1), "
            "dicesgd_tradeoff.png "
            "(stationary-point bias vs certified noise at eps = 2, DPSGD-GC vs DiceSGD)."
        ),
    )
    p.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="regenerate only this figure (file name, e.g. dicesgd_tradeoff.png; repeatable)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="output directory (default: a new temporary folder; '--out figures' rewrites the tracked ones)",
    )
    p.add_argument(
        "--quick", action="store_true", help="fewer points and steps (smoke test, not for the README)"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import os
    import sys

    from dptheory.cli.main import UsageError
    from dptheory.figures import FIGURES

    only = None
    if args.only:
        bad = [n for n in args.only if n not in FIGURES]
        if bad:
            raise UsageError("--only", f"must be one of {', '.join(FIGURES)} (got {bad[0]!r})")
        only = tuple(args.only)
    from dptheory.extras import require_extra

    require_extra("matplotlib", "torch")  # before the output directory is created
    out = args.out
    if out is None:
        import tempfile

        out = tempfile.mkdtemp(prefix="dptheory-figures-")
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError("--out", f"is not a directory: {out}")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(out) and not os.path.isdir(parent):
        raise UsageError("--out", f"parent directory does not exist: {parent}")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise UsageError("--out", f"cannot create directory {out}: {exc.strerror}") from None
    from dptheory.paths import probe_writable_dir

    probe_writable_dir("--out", out)
    from dptheory import figures

    def progress(msg: str) -> None:
        sys.stderr.write(f"figures: {msg}\n")

    results = figures.make_all(out, quick=args.quick, progress=progress, only=only)
    for name in results:
        print(os.path.join(out, name))
    return 0
