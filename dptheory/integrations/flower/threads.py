"""A Flower simulation-engine ``Backend`` that runs each ClientApp call on a worker thread.

Why: Flower's simulation engine hands every message to a ``Backend``
(``flwr.server.superlink.fleet.vce.backend.Backend``); 1.41 ships only the Ray one. On a small
machine Ray is most of the cost of a short run: ``ray.init`` and one actor process per worker
(each importing torch again) took about 5 s of a 12.5 s run of 10 clients x 20 rounds on two
cores, against 3 s for the whole in-process run (docs/flower.md, "Speed"). For clients that
each take milliseconds a thread does the same job.

What stays Flower's: ``flwr.simulation.run_simulation`` with its ``ServerApp`` thread,
``InMemoryGrid`` and ``LinkState``; the engine's message pump (``vce_api.run_api``: the queue of
instructions pulled from the LinkState, the worker threads calling ``Backend.process_message``,
the replies stored back, each node's ``Context`` kept by the engine between rounds); and the
``ClientApp`` called exactly as the Ray actor calls it (``app(message=..., context=...)``, mods
included, an exception wrapped in ``ClientAppException`` so the server sees Flower's error
reply). Only where that call executes differs: a thread of this process instead of a Ray actor.

Flower 1.41's ``start_vce`` builds its backend itself (it always imports the Ray one), so
:func:`thread_backend` swaps the ``backend_fn`` that ``start_vce`` passes to ``vce_api.run_api``,
for the calls inside the ``with`` block only, and puts the original back afterwards.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from flwr.app import Context, Message
from flwr.clientapp.client_app import ClientApp, ClientAppException, LoadClientAppError
from flwr.server.superlink.fleet.vce import vce_api
from flwr.server.superlink.fleet.vce.backend import Backend, BackendConfig

#: the ``backend_name`` given to ``run_simulation`` (any name but ``ray`` skips its Ray check)
BACKEND_NAME = "dptheory-threads"
_SWAP_LOCK = threading.Lock()


class ThreadBackend(Backend):
    """``num_workers`` ClientApp calls at a time, each on the engine's own worker thread.

    ``backend_config["client_resources"]["num_workers"]`` (default 1) sets how many messages are
    processed concurrently; the engine starts that many worker threads. A node gets one message
    per round, so no two calls share a ``Context``."""

    def __init__(self, backend_config: BackendConfig) -> None:
        super().__init__(backend_config)
        workers = backend_config.get("client_resources", {}).get("num_workers", 1)
        if not (isinstance(workers, int) and workers >= 1):
            raise ValueError(f"num_workers must be a positive integer (got {workers!r})")
        self._workers = workers
        self._app_fn: Callable[[], ClientApp] | None = None

    def build(self, app_fn: Callable[[], ClientApp]) -> None:
        self._app_fn = app_fn

    @property
    def num_workers(self) -> int:
        return self._workers

    def is_worker_idle(self) -> bool:
        return self._app_fn is not None

    def process_message(self, message: Message, context: Context) -> tuple[Message, Context]:
        if self._app_fn is None:
            raise ValueError("call build() before processing messages")
        try:
            app = self._app_fn()
            out = app(message=message, context=context)
        except LoadClientAppError:
            raise
        except Exception as ex:  # as Flower's ClientAppActor.run: the engine turns it into an error reply
            raise ClientAppException(str(ex)) from ex
        return out, context

    def terminate(self) -> None:
        self._app_fn = None


@contextmanager
def thread_backend(
    backend_config: BackendConfig | None = None, backend_type: type[ThreadBackend] = ThreadBackend
) -> Iterator[str]:
    """Within the block, Flower's simulation engine runs ClientApps on a ``backend_type`` (a
    :class:`ThreadBackend`) built from ``backend_config``; yields the ``backend_name`` to pass
    to ``run_simulation``.
    One such block at a time per process (the swap is process-wide while it lasts)."""
    original = vce_api.run_api
    config = dict(backend_config or {})

    def run_api(app_fn, backend_fn, nodes_mapping, state_factory, node_info_stores, f_stop, metrics):
        del backend_fn  # start_vce's: always the Ray backend in Flower 1.41
        return original(
            app_fn,
            lambda: backend_type(config),
            nodes_mapping,
            state_factory,
            node_info_stores,
            f_stop,
            metrics,
        )

    with _SWAP_LOCK:
        vce_api.run_api = run_api
        try:
            yield BACKEND_NAME
        finally:
            vce_api.run_api = original
