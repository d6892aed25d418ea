"""Where independent tasks run: in this process, on local processes, or on a Dask cluster (campaign runs, the
telemetry windows of a dataset build). One place, so every fan-out behaves the same way.

Local pools use the ``spawn`` start method (no fork after Numba or Polars threads started); a Dask run without an
``address`` starts a local cluster of single-threaded worker processes on the loopback interface and closes it.

With ``in_flight``, at most that many tasks are submitted at a time (the next one as one finishes), so that an
interrupted fan-out has little queued work to drop; a local pool never queues: each worker has one task at a time.
However the consumer stops (an exception, Ctrl-C, closing the iterator), the tasks not started are dropped and the
local worker processes are ended at once: none is left behind.
Local workers also end themselves when this process dies, even by ``kill -9`` (:func:`~wattsched.core.stopping.
worker_init`).

A local pool is :class:`_Pool`: one duplex pipe per worker, and this thread (the consumer's) sends the tasks and
reads the results itself. It replaced ``concurrent.futures.ProcessPoolExecutor`` (issue 31), whose manager thread
made stopped commands hang at exit. A stop raises KeyboardInterrupt wherever this thread is
(:func:`~wattsched.core.stopping.sigterm_as_interrupt`), and in that pool it could land (a) while the manager
thread read a result whose worker the stop then ended: with this process and the other workers holding the pipe's
writing end, no end of file came and the thread waited forever; or (b) inside the executor's own code between
acquiring a future's lock and releasing it, which the manager thread then waited for forever. CPython's exit joins
that thread (``concurrent.futures``' ``_python_exit``), so the command printed "interrupted" and never exited:
2 of ~105 stopped dataset builds; 4 of 4 with 400 MB results for (a); 2 of 100 once (a) was fixed, for (b). Here no
other thread runs and no lock is shared: an interruption anywhere leaves nothing to wait for, and ending the pool
is terminating its workers and closing its pipes. A worker's death is seen at once, whether it was computing or
sending (its pipe reaches end of file, since only it holds the other end), and raises
:class:`~concurrent.futures.process.BrokenProcessPool` instead of hanging.

Inside :func:`shared_workers` (a reproduction: 8–10 fan-outs in one command), every local fan-out of this thread
uses the same worker processes instead of starting its own: a fresh worker spends about 3 s importing the toolkit
and loading the compiled kernels from the cache before its first result (measured: 2 power runs on a fresh
2-worker pool 3.2–3.5 s, 100 runs 6.5 s), which was a fifth of ``reproduce 000 --quick``. A fan-out that stops
early (an error, a stop, the consumer closing it) still ends those workers at once; the next one starts new ones.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import multiprocessing.connection
import os
import pickle
import threading
import traceback
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from wattsched.core.stopping import worker_init

T = TypeVar("T")
R = TypeVar("R")

EXECUTORS = ("local", "dask")
#: How long an ended worker gets to exit after SIGTERM (then SIGKILL), and a finished pool's workers after their
#: stop message (then SIGTERM): they need milliseconds.
JOIN_S = 5.0


def default_workers(workers: int | None) -> int:
    """``workers``, or one worker process per core when it is not given (None or 0)."""
    return workers or max(1, os.cpu_count() or 1)


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
    ``in_flight`` bounds the tasks submitted at a time (unordered only; default: all at once on Dask, one per
    worker locally)."""
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
    if not items:
        return
    busy_at_most = len(items) if in_flight is None or ordered else max(in_flight, 1)
    size = min(workers, busy_at_most, len(items))
    shared = _Shared.usable()
    if shared is not None:
        yield from shared.results(fn, items, ordered, size)
        return
    pool = _Pool(size)  # ends what it started if interrupted meanwhile
    try:
        yield from pool.results(fn, items, ordered, size)
        pool.close()
    finally:  # however the consumer stopped (an error, a stop, closing the iterator): no worker outlives it
        pool.end()


@contextlib.contextmanager
def shared_workers() -> Iterator[None]:
    """Within this block, the local fan-outs of this thread (``map_tasks`` with ``executor="local"`` and more than
    one worker) share one set of worker processes, started at the first and grown to the largest number asked
    for; they are ended when the block exits. A fan-out started while another is being consumed gets workers of
    its own, as outside the block. A nested block shares the outer one's workers."""
    if _Shared.active() is not None:
        yield
        return
    shared = _Shared()
    _THREAD.shared = shared
    try:
        yield
    finally:
        _THREAD.shared = None
        shared.close()


#: Per thread: the :class:`_Shared` of its open :func:`shared_workers` block.
_THREAD = threading.local()


class _Shared:
    """The worker processes of a :func:`shared_workers` block."""

    def __init__(self) -> None:
        self.pid = os.getpid()  # a forked child inherits the thread's state, not its workers
        self.pool: _Pool | None = None
        self.busy = False

    @staticmethod
    def active() -> _Shared | None:
        shared: _Shared | None = getattr(_THREAD, "shared", None)
        return shared if shared is not None and shared.pid == os.getpid() else None

    @classmethod
    def usable(cls) -> _Shared | None:
        """The open block's workers, if no fan-out is using them."""
        shared = cls.active()
        return shared if shared is not None and not shared.busy else None

    def results(self, fn: Callable[[Any], Any], items: Sequence[Any], ordered: bool, size: int) -> Iterator[Any]:
        self.busy = True
        done = False
        try:
            if self.pool is None:
                self.pool = _Pool(size)
            else:
                self.pool.grow(size)
            yield from self.pool.results(fn, items, ordered, size)
            done = True
        finally:
            self.busy = False
            if not done and self.pool is not None:  # stopped with tasks possibly running: end them now
                pool, self.pool = self.pool, None
                pool.end()

    def close(self) -> None:
        if self.pool is not None:
            pool, self.pool = self.pool, None
            try:
                pool.close()
            finally:
                pool.end()


class _RemoteError:
    """A task's exception, sent back with its traceback as text (a traceback does not pickle); raised again here
    with that text as its cause, as ``concurrent.futures`` does. An exception that does not survive pickling
    becomes a RuntimeError with the text."""

    def __init__(self, exc: BaseException) -> None:
        self.text = "".join(traceback.format_exception(exc))
        self.exc: BaseException | None = exc
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:
            self.exc = None

    def error(self) -> BaseException:
        exc = self.exc if self.exc is not None else RuntimeError(f"a task failed in a worker:\n{self.text}")
        exc.__cause__ = _RemoteTraceback(self.text)
        return exc


class _RemoteTraceback(Exception):
    """The traceback of a task's exception in its worker (printed as the cause of the exception raised here)."""

    def __str__(self) -> str:
        return f'\n"""\n{self.args[0]}"""'


#: The key of a message that gives a worker the function of the tasks that follow.
_FUNCTION = -1


def _serve(conn: Connection, parent_pid: int) -> None:
    """A worker: run each task received (``(key, item)``) with the function last received (``(_FUNCTION, fn)``)
    and send back ``(key, True, result)`` or ``(key, False, error)``, until a ``None`` or the end of the pipe.
    :func:`worker_init` first (Ctrl-C ignored, exits with its parent)."""
    worker_init(parent_pid)
    fn: Callable[[Any], Any] | None = None
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        key, item = task
        if key == _FUNCTION:
            fn = item
            continue
        assert fn is not None, "a task before its function"
        try:
            reply: tuple[int, bool, Any] = (key, True, fn(item))
        except BaseException as exc:
            reply = (key, False, _RemoteError(exc))
        try:
            conn.send(reply)  # pickled whole before the first byte is written: a failure leaves the pipe clean
        except Exception as exc:  # a result that does not pickle
            conn.send((key, False, _RemoteError(exc)))
        del reply


class _Pool:
    """``size`` spawned worker processes, each with a duplex pipe of its own, driven by this thread alone: each
    worker has one task at a time, the next sent as soon as its result is read (a second one queued in the pipe
    could deadlock, both sides blocked on a full pipe with a large task and a large result). No thread and no
    lock: see the module docstring."""

    def __init__(self, size: int) -> None:
        self.processes: list[BaseProcess] = []
        self.pipes: list[Connection] = []
        self.grow(size)

    def grow(self, size: int) -> None:
        """Start workers until there are ``size``."""
        ctx = multiprocessing.get_context("spawn")
        try:
            for k in range(len(self.processes), size):
                mine, theirs = ctx.Pipe(duplex=True)
                self.pipes.append(mine)
                # not daemonic, as concurrent.futures' workers: a task may start processes of its own
                process = ctx.Process(target=_serve, args=(theirs, os.getpid()), name=f"wattsched-worker-{k + 1}")
                self.processes.append(process)  # before start: a stop inside start() still ends it
                process.start()
                theirs.close()  # the worker holds the only other end: its death is the pipe's end of file
        except BaseException:
            self.end()
            raise

    def results(self, fn: Callable[[Any], Any], items: Sequence[Any], ordered: bool, size: int) -> Iterator[Any]:
        """Every item's result of ``fn`` on the first ``size`` workers, in input order when ``ordered``, else as
        they finish."""
        pending = enumerate(items)
        running: dict[int, int] = {}  # worker -> task key
        waiting: dict[int, Any] = {}  # ordered: results finished before an earlier one
        following = 0
        for worker in range(min(size, len(self.processes))):
            self._send_function(worker, fn)
            self._send(worker, pending, running)
        while running or waiting:
            if ordered and following in waiting:
                following += 1
                yield waiting.pop(following - 1)
                continue
            replies = self._finished(running)
            while replies:
                worker, key, ok, value = replies.pop()  # popped: once yielded, only the consumer holds a result
                self._send(worker, pending, running)
                if not ok:
                    raise value.error()
                if ordered:
                    waiting[key] = value
                else:
                    yield value
                del value

    def _send_function(self, worker: int, fn: Callable[[Any], Any]) -> None:
        try:
            self.pipes[worker].send((_FUNCTION, fn))
        except OSError:  # the worker died idle: its pipe is closed
            raise self._broken(worker) from None

    def _send(self, worker: int, pending: Iterator[tuple[int, Any]], running: dict[int, int]) -> None:
        for key, item in itertools.islice(pending, 1):
            try:
                self.pipes[worker].send((key, item))
            except OSError:  # the worker died idle: its pipe is closed
                raise self._broken(worker) from None
            running[worker] = key

    def _finished(self, running: dict[int, int]) -> list[tuple[int, int, bool, Any]]:
        """Wait until a running worker replied or any worker died; the replies, by worker."""
        by_pipe = {self.pipes[w]: w for w in running}
        by_sentinel = {p.sentinel: w for w, p in enumerate(self.processes)}
        ready = multiprocessing.connection.wait([*by_pipe, *by_sentinel])
        replies = []
        for pipe, worker in by_pipe.items():
            if pipe in ready:
                try:
                    key, ok, value = pipe.recv()
                except (EOFError, OSError):  # it died, between results or in the middle of one: its pipe ended
                    raise self._broken(worker) from None
                del running[worker]
                replies.append((worker, key, ok, value))
        if not replies:
            raise self._broken(next(w for s, w in by_sentinel.items() if s in ready))
        return replies

    def _broken(self, worker: int) -> BrokenProcessPool:
        process = self.processes[worker]
        process.join(JOIN_S)
        return BrokenProcessPool(
            f"a worker process ended (exit code {process.exitcode}) while tasks were running; "
            "the process pool is not usable anymore"
        )

    def close(self) -> None:
        """Every task done: ask the workers to exit and wait for them (:meth:`end` ends the late ones)."""
        for pipe in self.pipes:
            with contextlib.suppress(OSError):
                pipe.send(None)
        for process in self.processes:
            if process.pid is not None:
                process.join(JOIN_S)

    def end(self) -> None:
        """End the workers now, computing or sending (SIGTERM, SIGKILL after :data:`JOIN_S`), and close the pipes:
        nothing is left to wait for. A stop that arrives meanwhile is raised once they are ended (a second one
        exits at once: :func:`~wattsched.core.stopping.sigterm_as_interrupt`)."""
        stop: BaseException | None = None
        while True:
            try:
                self._end_now()
                break
            except KeyboardInterrupt as exc:  # ending is bounded and idempotent: finish it, then stop
                stop = exc
        if stop is not None:
            raise stop

    def _end_now(self) -> None:
        started = [p for p in self.processes if p.pid is not None]
        for process in started:
            if process.exitcode is None:
                process.terminate()
        for process in started:
            process.join(JOIN_S)
            if process.exitcode is None:
                process.kill()
                process.join(JOIN_S)
        for pipe in self.pipes:
            pipe.close()


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
