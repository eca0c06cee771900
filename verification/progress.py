"""A progress bar over checks (tqdm on stderr; silent when stderr is not a terminal)."""

from __future__ import annotations

import sys
from collections.abc import Callable


class CheckProgress:
    """Counts finished checks; ``step(label)`` is called before each check starts, or
    ``advance(n, label)`` after ``n`` checks finished together."""

    def __init__(self, total: int, *, enabled: bool | None = None) -> None:
        from tqdm import tqdm

        disable = None if enabled is None else not enabled
        self._bar = tqdm(
            total=total, file=sys.stderr, unit="check", desc="verify", leave=False, disable=disable
        )
        self._started = False

    def step(self, label: str) -> None:
        if self._started:
            self._bar.update(1)
        self._started = True
        # shown at once: one check can run for minutes, and its name is the only news till then
        self._bar.set_postfix_str(label, refresh=True)

    def advance(self, n: int, label: str) -> None:
        """``n`` checks finished at once (a whole claim run elsewhere, by a worker process)."""
        self._bar.set_postfix_str(label, refresh=False)
        self._bar.update(n)

    def callback(self) -> Callable[[str], None]:
        return self.step

    def close(self) -> None:
        if self._started:
            self._bar.update(1)
        self._bar.close()
