"""Where independent tasks run: in this process, on local processes, or on a Dask cluster (campaign runs, the
telemetry windows of a dataset build). One place, so every fan-out behaves the same way.

Local pools use the ``spawn`` start method (no fork after Numba or Polars threads started); a Dask run without an
``address`` starts a local cluster of single-threaded worker processes on the loopback interface and closes it.

With ``in_flight``, at most that many tasks are submitted at a time (the next one as one finishes), so that an
interrupted fan-out has little queued work to drop. However the consumer stops (an exception, Ctrl-C, closing the
iterator), queued tasks are cancelled and the local worker processes are ended at once: none is left behind.
Local workers also end themselves when this process dies, even by ``kill -9`` (:func:`~wattsched.core.stopping.
worker_init`).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, TypeVar

from wattsched.core.stopping import worker_init

T = TypeVar("T")
R = TypeVar("R")

EXECUTORS = ("local", "dask")
#: How long an ended pool's manager thread gets to close its queues (it needs milliseconds once the workers are gone).
MANAGER_JOIN_S = 10.0


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
    in_flight: int | None = None,
) -> Generator[R, None, None]:
    """Results of ``fn`` over ``items``: in input order when ``ordered``, else as they finish. ``fn`` must be a
    picklable top-level function (or a ``functools.partial`` of one) unless it runs here (``local``, 1 worker).
    ``in_flight`` bounds the tasks submitted at a time (unordered only; default: all at once)."""
    check_executor(executor)
    if executor == "local":
        yield from _local(fn, items, workers, ordered, in_flight)
    else:
        yield from _dask(fn, items, workers, address, ordered, keys, in_flight)


def _local(fn: Callable[[T], R], items: Sequence[T], workers: int, ordered: bool, in_flight: int | None) -> Iterator[R]:
    if workers <= 1:
        for item in items:
            yield fn(item)
        return
    ctx = multiprocessing.get_context("spawn")
    # each worker ignores Ctrl-C (this process ends it) and exits when this process dies, even by kill -9
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=worker_init, initargs=(os.getpid(),))
    try:
        if ordered:
            yield from pool.map(fn, items)
        else:
            pending = iter(items)
            limit = len(items) if in_flight is None else max(in_flight, 1)
            running = {pool.submit(fn, item) for item in itertools.islice(pending, limit)}
            while running:
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    result = future.result()
                    running |= {pool.submit(fn, item) for item in itertools.islice(pending, 1)}
                    yield result
    except BaseException:
        _end_pool(pool)
        raise
    pool.shutdown(wait=True)


def _end_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued tasks and end the pool's worker processes now (a plain shutdown would wait for the
    running tasks, i.e. leave workers computing after Ctrl-C or SIGTERM), then wait for the pool's manager
    thread, which closes the queues once it sees the workers gone. Without that wait the thread outlives the
    command: CPython 3.11's exit then wakes it through a pipe it may have closed (``OSError: Bad file
    descriptor`` printed after the command's last line), and the queues' semaphores can be reported leaked."""
    processes = list((pool._processes or {}).values())  # the pool's own workers (no public accessor)
    manager: threading.Thread | None = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(5.0)
        if process.is_alive():
            process.kill()
            process.join(5.0)
    if manager is not None:
        manager.join(MANAGER_JOIN_S)


def _dask(
    fn: Callable[[T], R],
    items: Sequence[T],
    workers: int,
    address: str | None,
    ordered: bool,
    keys: Sequence[str] | None,
    in_flight: int | None,
) -> Iterator[R]:
    from distributed import Client, LocalCluster, as_completed  # deferred: dask is heavy and optional here

    cluster = None
    if address is None:
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1"
        )
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        items = list(items)
        names = list(keys) if keys is not None else None
        if ordered or in_flight is None or in_flight >= len(items):
            extra: dict[str, Any] = {"key": names} if names is not None else {}
            futures = client.map(fn, items, pure=False, **extra)
            for future in futures if ordered else as_completed(futures):
                yield future.result()
            return
        submitted = 0

        def submit() -> Any:
            nonlocal submitted
            k = submitted
            submitted += 1
            extra = {"key": names[k]} if names is not None else {}
            return client.submit(fn, items[k], pure=False, **extra)

        stream = as_completed([submit() for _ in range(max(in_flight, 1))])
        for future in stream:
            if submitted < len(items):
                stream.add(submit())
            yield future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
