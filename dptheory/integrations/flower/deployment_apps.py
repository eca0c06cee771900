"""The app objects named in the generated Flower App's ``[tool.flwr.app.components]``.

In a deployment the settings come from ``[tool.flwr.app.config]`` (``context.run_config``).
"""

from __future__ import annotations

from dptheory.integrations.flower.apps import make_client_app, make_server_app

server_app = make_server_app()
client_app = make_client_app()
