"""Where independent tasks run: in this process, on local processes, or on a Dask cluster (campaign runs, the
telemetry windows of a dataset build). One place, so every fan-out behaves the same way.

Local pools use the ``spawn`` start method (no fork after Numba or Polars threads started); a Dask run without an
``address`` starts a local cluster of single-threaded worker processes on the loopback interface and closes it.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

EXECUTORS = ("local", "dask")


def check_executor(executor: str, error: type[Exception] = ValueError) -> None:
    """Refuse an unknown executor name with ``error`` (a campaign raises its own error type)."""
    if executor not in EXECUTORS:
        raise error(f"executor must be 'local' or 'dask', got {executor!r}")


def map_tasks(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    executor: str = "local",
    workers: int = 1,
    address: str | None = None,
    ordered: bool = True,
    keys: Sequence[str] | None = None,
) -> Iterator[R]:
    """Results of ``fn`` over ``items``: in input order when ``ordered``, else as they finish. ``fn`` must be a
    picklable top-level function (or a ``functools.partial`` of one) unless it runs here (``local``, 1 worker)."""
    check_executor(executor)
    if executor == "local":
        yield from _local(fn, items, workers, ordered)
    else:
        yield from _dask(fn, items, workers, address, ordered, keys)


def _local(fn: Callable[[T], R], items: Sequence[T], workers: int, ordered: bool) -> Iterator[R]:
    if workers <= 1:
        for item in items:
            yield fn(item)
        return
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        if ordered:
            yield from pool.map(fn, items)
            return
        for future in as_completed([pool.submit(fn, item) for item in items]):
            yield future.result()


def _dask(
    fn: Callable[[T], R],
    items: Sequence[T],
    workers: int,
    address: str | None,
    ordered: bool,
    keys: Sequence[str] | None,
) -> Iterator[R]:
    from distributed import Client, LocalCluster, as_completed  # heavy (Dask), only with this executor

    cluster = None
    if address is None:
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1"
        )
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        extra: dict[str, Any] = {"key": list(keys)} if keys is not None else {}
        futures = client.map(fn, list(items), pure=False, **extra)
        for future in futures if ordered else as_completed(futures):
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
