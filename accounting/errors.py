"""Exceptions the accountant raises for bad input.

They carry the name of the offending parameter (as the CLI spells it, e.g. ``--eps``)
so that every front end can print one line naming the option and what is allowed.
"""

from __future__ import annotations


class InvalidParameter(ValueError):
    """A parameter is outside its allowed range, NaN, or of the wrong kind."""

    def __init__(self, option: str, message: str) -> None:
        self.option = option
        self.message = message
        super().__init__(f"{option}: {message}")


class UnreachableTarget(InvalidParameter):
    """A calibration target that no finite value of the calibrated parameter can reach."""


class NotCertified(InvalidParameter):
    """A certified number was requested where no defensible upper bound is implemented."""
