"""Clip21-SGD2M on Flower (``pip install -e ".[flower]"``): real clients, local DP, same iterates.

* :mod:`.apps` -- the ``ServerApp`` and ``ClientApp`` (import flwr and torch);
* :mod:`.launch` -- start a run on Flower's simulation engine or on a local deployment
  (SuperLink + SuperNodes on 127.0.0.1), and stop every process it started;
* :mod:`.backend` -- ``dptheory run --backend flower``: the run as a :class:`dptheory.runner.RunResult`
  plus each client's certified local-DP epsilon.

Nothing here is imported by ``import dptheory``; docs/flower.md explains multi-machine runs.
"""
