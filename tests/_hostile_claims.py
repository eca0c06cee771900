"""A claims file whose check (``body``) or module top level (``top``) runs hostile code: shared by the
CLI fuzz suite and the envelope tests.  The check's ``body`` line is line 5 of the file (tests match
the crash location ``hostile.py:5``)."""

CLAIM_TEMPLATE = """from dptheory.claims import Check, Claim, Outcome, Verdict
import os, sys

def _check(ctx):
    {body}
    return Outcome(Verdict.CONFIRMED, "fine", "trivial", {{}})

{top}
CLAIMS = [Claim(id="user.hostile", paper="user", location="here", statement="s", formula="f",
                assumptions=(), checks=(Check("c", "property", _check),))]
"""


def claims_source(body: str, top: str = "") -> str:
    """The text of a claims file running ``body`` inside its check and ``top`` at import."""
    return CLAIM_TEMPLATE.format(body=body, top=top)
