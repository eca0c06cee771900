"""``dptheory verify``: run the papers' claims as executable checks and print their verdicts.

Exit status: 0 when every requested check ran (whatever the verdicts), 1 when a check crashed
(each crash is named on stderr; the other checks still run), 2 for bad input (unknown claim id
or paper, unwritable report directory, a ``--claims-file`` that cannot be loaded). Heavy imports
happen inside :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from dptheory.cli.numbers import integer

PAPERS = ("dicesgd", "clip21", "d2p2")


def register(sub) -> None:
    p = sub.add_parser(
        "verify",
        help="check the papers' claims (symbolic, property-based, empirical, privacy)",
        description="Run the claims of the DiceSGD, Clip21-SGD2M and D2P2-SGD papers as executable checks. "
        "Each claim gets a verdict (confirmed / refuted / inconclusive) computed now, with its evidence.",
    )
    p.add_argument(
        "--claim",
        action="append",
        metavar="ID",
        default=[],
        help="a claim id (repeatable), e.g. dicesgd.lemma-a7",
    )
    p.add_argument("--paper", choices=PAPERS, help="all claims of one paper")
    p.add_argument("--all", action="store_true", help="every claim")
    p.add_argument(
        "--quick", action="store_true", help="smaller grids / fewer seeds (CI: --all --quick < 2 min)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of {id, paper, location, verdict, summary, evidence}",
    )
    p.add_argument(
        "--report", metavar="DIR", help="write a Markdown report with figures into DIR (atomically)"
    )
    p.add_argument(
        "--markdown-table", action="store_true", help="print the Markdown verdict table (docs/verdicts.md)"
    )
    p.add_argument(
        "--claims-file",
        metavar="FILE",
        help="also load the claims of FILE, a Python file defining CLAIMS with the public API "
        "dptheory.claims (see docs/your-paper.md); alone, it selects all of them",
    )
    p.add_argument("--list", action="store_true", help="list the claim ids and exit")
    p.add_argument("--seed", type=integer, default=0, help="seed for every randomised check (default 0)")
    p.add_argument(
        "--jobs",
        type=_jobs,
        metavar="N",
        help="run claims in N worker processes (default: one more than the idle CPUs, at most the "
        "CPUs this process may use and one per claim; 1 when the claims take under about 10 s); "
        "1 runs them in this process; the results are the same for every N",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dptheory.cli.main import UsageError
    from verification import registry
    from verification.engine import run_claims, select

    if args.seed < 0:
        raise UsageError("--seed", f"must be an integer >= 0 (got {args.seed})")
    user = _load_user_claims(args.claims_file)
    if args.list:
        listed = list(user.values()) if user else list(registry.CLAIMS.values())
        if args.json:
            rows = [{"id": c.id, "paper": c.paper, "location": c.location} for c in listed]
            json.dump(rows, sys.stdout, indent=2)
            sys.stdout.write("\n")
            return 0
        for c in listed:
            sys.stdout.write(f"{c.id}\t{c.location}\n")
        return 0
    if not (args.claim or args.paper or args.all or user):
        raise UsageError(
            "verify",
            "choose what to check: --claim ID (repeatable), --paper dicesgd|clip21|d2p2, --all, "
            "or --claims-file FILE",
        )
    builtin_ids = [cid for cid in args.claim if cid not in user]
    try:
        claims = select(builtin_ids, args.paper, args.all) if (builtin_ids or args.paper or args.all) else []
    except KeyError as exc:
        known = ", ".join([*user, *registry.CLAIMS])
        raise UsageError("--claim", f"unknown claim id {exc.args[0]!r} (known: {known})") from None
    except ValueError as exc:
        raise UsageError("--paper", f"unknown paper {exc.args[0]!r} (allowed: {', '.join(PAPERS)})") from None
    if user:  # the file's claims, in its order, after the built-in ones: all, or those named by --claim
        picked = [c for c in user.values() if c.id in args.claim] if args.claim else list(user.values())
        claims = claims + picked
    from dptheory.extras import require_extra

    # Checked before any claim runs: a claim whose check cannot import its tools would otherwise be
    # reported as crashed, a different answer, instead of as an installation to complete.
    require_extra("torch", "sympy", "hypothesis", *(["matplotlib"] if args.report is not None else []))
    target = None
    if args.report is not None:
        from verification.report import ReportDirError, check_report_dir

        try:
            target = check_report_dir(args.report)
        except ReportDirError as exc:
            raise UsageError("--report", str(exc)) from None

    from verification.parallel import default_jobs

    jobs = args.jobs if args.jobs is not None else default_jobs(claims, args.quick)
    t0 = time.perf_counter()
    results = run_claims(
        claims,
        seed=args.seed,
        quick=args.quick,
        extra=user,
        claims_file=args.claims_file or "",
        jobs=jobs,
        # a bar per check on a terminal (verification.progress); none when the output is machine-read
        progress=False if (args.json or args.markdown_table) else None,
    )
    elapsed = time.perf_counter() - t0

    for r in results:
        for ch in r.crashed:
            sys.stderr.write(f"dptheory verify: check {r.claim.id}:{ch.name} crashed: {ch.crashed}\n")

    if args.json:
        json.dump([r.to_json() for r in results], sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    elif args.markdown_table:
        from verification.report import verdict_table

        sys.stdout.write(verdict_table(results))
    else:
        from verification.report import kind_cell, verdict_context

        for r in results:
            text = f"[{kind}] {r.summary}" if (kind := kind_cell(r)) else r.summary
            row = f"{r.claim.id:34s} {r.verdict.value:13s} {r.seconds:6.1f}s  {_short(text, 150)}"
            sys.stdout.write(row + "\n")
            for line in verdict_context(r):  # reading(s), searched domain, premises
                sys.stdout.write(f"    {_short(line, 240)}\n")
        from verification.report import verdict_counts

        sys.stdout.write(f"{len(results)} claims in {elapsed:.1f}s: {verdict_counts(results)}\n")
    if target is not None:
        from verification.report import write_report

        command = "dptheory verify " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "dptheory verify"
        write_report(results, target, seed=args.seed, quick=args.quick, command=command, runtime_s=elapsed)
        sys.stderr.write(f"dptheory verify: report written to {target}/report.md\n")
    return 1 if any(r.crashed for r in results) else 0


def _load_user_claims(path: str | None) -> dict:
    """The claims of ``--claims-file`` by id ({} without it); bad files are one-line usage errors."""
    if path is None:
        return {}
    from dptheory.cli.main import UsageError
    from verification import registry
    from verification.userfile import ClaimsFileError, load_claims_file

    try:
        return {c.id: c for c in load_claims_file(path, builtin=registry.CLAIMS)}
    except ClaimsFileError as exc:
        raise UsageError("--claims-file", str(exc)) from None


def _jobs(text: str) -> int:
    """``--jobs``: a whole number of worker processes, at least 1."""
    n = integer(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of processes, at least 1 (got {text!r})")
    return n


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"
