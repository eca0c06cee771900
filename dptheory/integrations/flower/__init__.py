"""Clip21-SGD2M on Flower (``pip install -e ".[flower]"``): real clients, local DP, same iterates.

* :mod:`.apps` -- the ``ServerApp`` and ``ClientApp`` (import flwr and torch);
* :mod:`.launch` -- start a run on Flower's simulation engine or on a local deployment
  (SuperLink + SuperNodes on 127.0.0.1), and stop every process it started;
* :mod:`.threads` -- a simulation-engine ``Backend`` running the ClientApps on worker threads
  (the default runtime: Flower's engine without Ray);
* :mod:`.ledger` -- a client's certified local-DP ledger (pure Python);
* :mod:`.mods` -- :class:`PrivacyLedgerMod` (a client mod: clip, noise, ledger, budget stop) and
  :class:`LedgerCollector` (the server side);
* :mod:`.backend` -- ``dptheory run --backend flower``: the run as a :class:`dptheory.runner.RunResult`
  plus each client's certified local-DP epsilon.

Nothing here is imported by ``import dptheory``, and importing this package imports no flwr:
``PrivacyLedgerMod`` and ``LedgerCollector`` are loaded on first access. docs/flower.md explains
multi-machine runs.
"""

from typing import Any

__all__ = ["PrivacyLedgerMod", "LedgerCollector", "LocalDpLedger"]


def __getattr__(name: str) -> Any:
    if name in ("PrivacyLedgerMod", "LedgerCollector"):
        from dptheory.integrations.flower import mods

        return getattr(mods, name)
    if name == "LocalDpLedger":
        from dptheory.integrations.flower.ledger import LocalDpLedger

        return LocalDpLedger
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
