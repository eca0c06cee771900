"""The app objects named in the generated Flower App's ``[tool.flwr.app.components]``.

In a deployment the settings come from ``[tool.flwr.app.config]`` (``context.run_config``).
"""

from __future__ import annotations

from dptheory.integrations.flower.apps import make_client_app, make_server_app

server_app = make_server_app()
client_app = make_client_app()


def warm_up() -> None:
    """Run one tiny ``torch.func.grad`` so that torch's lazy imports (``torch._dynamo``) are done:
    called by the warm clientapp server (:mod:`.forkserver`) before it forks."""
    import torch

    torch.func.grad(lambda x: (x * x).sum())(torch.zeros(2, dtype=torch.float64))
