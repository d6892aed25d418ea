"""Download public datasets from their archive records (Zenodo), with required checksums, size bounds and resume.

``fetch_record`` asks the archive's API for the record's files (name, size, checksum, link), checks each entry
(:func:`check_entry`: a plain, printable file name, a link on the archive's own https origin, a checksum, a size
within the limit), then for each wanted file: skips it if it is already there with the right checksum, otherwise
downloads into ``<name>.part`` — continuing a previous partial download with an HTTP ``Range`` request — verifies
the checksum and renames the file into place. An interrupted fetch is resumed by running it again; a corrupt file
is never left under its final name, and nothing is written outside the target folder: the partial file is opened
without following a symbolic link, and one that is a link, not a regular file, not the user's or with a second
hard link is refused (:func:`_open_part`), since a planted ``<name>.part`` would otherwise redirect the write.

Nothing hangs (issue 31): the socket timeout bounds one read only, and a server that sends a byte every few seconds
never trips it. Every exchange therefore runs under a watchdog thread (:class:`_Transfer`) that ends it when the
whole fetch passes its deadline (``deadline``, default :data:`DEADLINE_S`) or when fewer than ``min_rate`` bytes
per second arrived over the last ``stall_window`` seconds (defaults :data:`MIN_RATE`, :data:`STALL_WINDOW_S`),
whatever the exchange is blocked in (connection, TLS, headers, body); the partial file stays for a resume.

Every message of a :class:`FetchError` is printable: names, links and the server's own words (an HTTP reason
phrase) are shown with their control, format and bidirectional characters escaped, so nothing from the network
reaches the terminal raw.

Hand-written on purpose (issue 16 asked for pooch): measured with a loopback server that cuts the first response
after 300 kB of a 1 MB file, ``pooch.retrieve`` (1.9) deletes the partial temporary file on the error and the retry
downloads the whole file again from byte 0 (no ``Range`` header sent either time); its ``requests`` downloader also
follows redirects to any host. A fetch of a multi-GB record over a flaky link must resume, and the links must stay
on the archive's origin, so the urllib code below stays. ``tests/test_fetch.py`` guards resume and refusals.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import hashlib
import http.client
import ipaddress
import json
import math
import os
import re
import socket
import stat
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

from wattsched.core.structured_input import load_json

#: PM100 (Marconi100 job power) on Zenodo: the later version of the record that holds ``job_table.parquet``.
PM100_RECORD = "10127767"
ZENODO = "https://zenodo.org"
CHUNK = 1 << 20
#: Largest file a fetch accepts by default (``--max-size``): 64 GiB, above any file of the PM100 record.
MAX_FILE_BYTES = 64 << 30
#: Largest record description (the API's JSON) read: a record lists a few hundred files at most.
MAX_RECORD_BYTES = 16 << 20
#: Checksum algorithms accepted in a record (``<algorithm>:<hex>``); Zenodo lists md5.
ALGORITHMS = ("md5", "sha1", "sha256", "sha512")
#: Default ``--deadline``: seconds a whole fetch may take, a day. The largest file ``--max-size`` accepts by default
#: (64 GiB) arrives within it at 6.4 Mbit/s or more; on a slower link the deadline stops the fetch with the partial
#: file kept and the next run resumes, so a daily unattended fetch never overlaps the next one and nothing is lost.
DEADLINE_S = 86_400.0
#: Default ``--min-rate`` (bytes/s, averaged over ``--stall-window``): 1 KiB/s. Any working link (even a GPRS link
#: moves several KiB/s) is far above it, and at 1 KiB/s a 1 GiB file would take 12 days, so a transfer below it
#: is stalled, not slow; a server trickling a byte every 2 s (0.5 B/s) is stopped after one window.
MIN_RATE = 1024.0
#: Default ``--stall-window`` (s): 60, the per-read timeout the fetch always had. It outlasts TCP's retransmission
#: back-off for a short outage (1 + 2 + 4 + 8 + 16 = 31 s after five losses), a Wi-Fi hand-over or a server's
#: pause, so a brief hiccup does not abort a multi-hour download.
STALL_WINDOW_S = 60.0
_RECORD_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def _printable(text: str) -> str:
    """``text`` with each character that is not printable (C0 and C1 controls such as ESC and CSI, bidirectional
    and other format characters, line breaks) written as its escape: text from the network must not steer the
    terminal it is printed on (a CSI or ESC sequence rewrites the screen, U+202E reverses what follows)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class FetchError(RuntimeError):
    """The record or a file could not be fetched or verified (with the URL and why). The message is made printable
    (:func:`_printable`): it may quote the server's words, and it ends on the user's terminal."""

    def __init__(self, message: str) -> None:
        super().__init__(_printable(message))


@dataclass(frozen=True)
class RemoteFile:
    name: str
    size: int | None
    checksum: str | None  # "md5:<hex>"
    url: str


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _shown(value: object) -> str:
    """``repr`` of a value from the network, cut to 80 characters (an error line never echoes a whole payload;
    ``repr`` escapes a string's non-printable characters)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_base_url(base_url: str) -> str:
    """The archive URL, refused unless https (plain http only on a loopback address, for local mirrors and tests)."""
    scheme, host, _ = _origin(base_url)
    if not host or scheme not in ("https", "http") or (scheme == "http" and not _is_loopback(host)):
        raise FetchError(f"--base-url {base_url!r}: only https archives are fetched from (http only on loopback)")
    return base_url.rstrip("/")


def check_limits(deadline: float, min_rate: float, stall_window: float) -> None:
    """A ValueError, naming the option, for a deadline or stall window that is not a positive number of seconds or
    a minimum rate that is not a finite number of bytes per second ≥ 0 (0 turns the rate check off)."""
    if not deadline > 0:
        raise ValueError(f"--deadline must be a positive number of seconds, got {deadline:g}")
    if not 0 <= min_rate < math.inf:
        raise ValueError(f"--min-rate must be a number of bytes per second ≥ 0 (0: no minimum), got {min_rate:g}")
    if not stall_window > 0:
        raise ValueError(f"--stall-window must be a positive number of seconds, got {stall_window:g}")


def _name_problem(name: object) -> str | None:
    """Why ``name`` is not a plain file name, or None."""
    if not isinstance(name, str) or not name:
        return "not a non-empty string"
    if len(name) > 255:
        return "longer than 255 characters"
    if name in (".", "..") or name.startswith("."):
        return "'.', '..' or a hidden name"
    if any(c in name for c in "/\\"):
        return "a path separator"
    bad = next((c for c in name if not c.isprintable()), None)
    if bad is not None:
        return f"the non-printable character {bad!r} (control, format or bidirectional)"
    return None


def check_name(name: object, record: str) -> str:
    """A record's file name, usable as a file name in the target folder and printable on a terminal: no path
    separator, no ``..``, not hidden, and only printable characters (:meth:`str.isprintable`: no C0 or C1 control,
    no bidirectional or other format character, no line break). Anything else is refused, not renamed: the name
    comes from the network and is the file's identity in the record (``--file NAME``), so a silently altered name
    would be a file the record does not list."""
    why = _name_problem(name)
    if why is not None:
        raise FetchError(f"record {record}: file name {_shown(name)} is not a plain file name ({why}); refused")
    return cast(str, name)


def check_entry(remote: RemoteFile, record: str, base_url: str, max_size: int = MAX_FILE_BYTES) -> RemoteFile:
    """Refuse a record entry whose name is not plain, whose link is not printable ASCII or leaves the archive's
    origin (another host, port or scheme: ``file://``, ``http://``), that lists no checksum or one of an unknown
    algorithm, or whose size is unknown, negative or above ``max_size``."""
    where = f"record {record}, file {_shown(remote.name)}"
    check_name(remote.name, record)
    url = remote.url
    if not isinstance(url, str) or not url.isascii() or not url.isprintable() or " " in url:
        raise FetchError(f"{where}: link {_shown(url)} is not printable ASCII (a URL is percent-encoded); refused")
    if _origin(url) != _origin(base_url):
        raise FetchError(f"{where}: link {_shown(url)} is not on the archive {base_url}; refused")
    checksum = remote.checksum
    if not isinstance(checksum, str) or ":" not in checksum:
        raise FetchError(f"{where}: the record lists no checksum (got {_shown(checksum)}); refused, nothing verified")
    algorithm, digest = checksum.split(":", 1)
    if algorithm.lower() not in ALGORITHMS or not re.fullmatch(r"[0-9a-fA-F]+", digest):
        raise FetchError(f"{where}: unsupported checksum {_shown(checksum)} (accepted: {', '.join(ALGORITHMS)})")
    if not isinstance(remote.size, int) or isinstance(remote.size, bool) or remote.size < 0:
        raise FetchError(f"{where}: the record gives no valid size (got {_shown(remote.size)}); refused")
    if remote.size > max_size:
        raise FetchError(f"{where}: {remote.size:,} bytes is above the limit of {max_size:,} (--max-size); refused")
    return remote


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to the origin the request started on."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if _origin(newurl) != _origin(req.full_url):
            raise FetchError(f"{req.full_url}: redirected to {_shown(newurl)}, off the archive; refused")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _adopting(http_class: Any, adopt: Callable[[socket.socket], None]) -> Callable[..., http.client.HTTPConnection]:
    """``http_class`` (urllib's connection class) whose new sockets are handed to ``adopt`` as soon as they are
    connected, before TLS, a proxy tunnel or the request: the watchdog can then end an exchange in any phase."""

    def connection(*args: Any, **kwargs: Any) -> http.client.HTTPConnection:
        conn = http_class(*args, **kwargs)
        create = conn._create_connection  # socket.create_connection, called by HTTPConnection.connect

        def create_and_adopt(*a: Any, **k: Any) -> socket.socket:
            sock = create(*a, **k)
            adopt(sock)
            return sock

        conn._create_connection = create_and_adopt
        return cast(http.client.HTTPConnection, conn)

    return connection


class _WatchedHTTP(urllib.request.HTTPHandler):
    def __init__(self, adopt: Callable[[socket.socket], None]) -> None:
        super().__init__()
        self._adopt = adopt

    def do_open(self, http_class: Any, req: urllib.request.Request, **kwargs: Any) -> http.client.HTTPResponse:
        return super().do_open(_adopting(http_class, self._adopt), req, **kwargs)


class _WatchedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, adopt: Callable[[socket.socket], None]) -> None:
        super().__init__()
        self._adopt = adopt

    def do_open(self, http_class: Any, req: urllib.request.Request, **kwargs: Any) -> http.client.HTTPResponse:
        return super().do_open(_adopting(http_class, self._adopt), req, **kwargs)


def _opener(adopt: Callable[[socket.socket], None]) -> urllib.request.OpenerDirector:
    """Only http(s) handlers (no file:, ftp: or data: handler), redirects kept on the origin, each socket handed to
    ``adopt`` (the watchdog of :class:`_Transfer`)."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),  # the environment's proxies, as urllib's default opener
        urllib.request.UnknownHandler(),
        _WatchedHTTP(adopt),
        _WatchedHTTPS(adopt),
        urllib.request.HTTPErrorProcessor(),
        urllib.request.HTTPDefaultErrorHandler(),
        _SameOrigin(),
    ):
        opener.add_handler(handler)
    return opener


@dataclass(frozen=True)
class _Pace:
    """The limits of a fetch: ``ends_at`` (``time.monotonic``) is when the ``deadline`` seconds of the whole fetch
    run out; a transfer with fewer than ``min_rate`` × ``stall_window`` bytes in its last ``stall_window`` seconds
    is stalled."""

    deadline: float
    ends_at: float
    min_rate: float
    stall_window: float

    @classmethod
    def start(cls, deadline: float, min_rate: float, stall_window: float) -> _Pace:
        check_limits(deadline, min_rate, stall_window)
        return cls(deadline, time.monotonic() + deadline, min_rate, stall_window)


class _Transfer:
    """One HTTP exchange under the fetch's deadline and minimum rate, enforced by a watchdog thread.

    A socket timeout cannot do it: it bounds one read, and a server that sends a byte just before each timeout (or
    drips a header line) holds the reader forever. The watchdog looks every tick at the bytes counted in
    ``received`` (the body read so far); when the deadline passes or the last window brought too few bytes, it
    records why in ``reason`` and shuts the connection's sockets down, which wakes the reader wherever it is
    blocked (connect done, TLS handshake, status line, headers, body). It holds duplicates of the sockets, so a
    shutdown never reaches a descriptor number the process has since reused. ``received`` is written by the reader
    only; the watchdog only reads it."""

    def __init__(self, pace: _Pace) -> None:
        self.pace = pace
        self.received = 0
        self.reason: str | None = None
        self.response: http.client.HTTPResponse | None = None
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="wattsched-fetch-watchdog", daemon=True)

    def __enter__(self) -> _Transfer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        if self.response is not None:
            self.response.close()
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()

    def open(self, request: urllib.request.Request | str, timeout: float) -> http.client.HTTPResponse:
        """Send ``request``; its response is closed when the transfer ends."""
        if time.monotonic() >= self.pace.ends_at:
            self.reason = self._deadline_reason()
            raise TimeoutError(self.reason)
        self.response = cast(http.client.HTTPResponse, _opener(self._adopt).open(request, timeout=timeout))
        return self.response

    def read(self, response: http.client.HTTPResponse, size: int = CHUNK) -> bytes:
        """What arrived, up to ``size`` bytes, without waiting for all of them (``read1``): the count the watchdog
        sees moves with every packet, and a slow server cannot hold one ``read`` until a whole chunk arrived."""
        block = response.read1(size)
        self.received += len(block)
        return block

    def _adopt(self, sock: socket.socket) -> None:
        dup = sock.dup()
        with self._lock:
            self._sockets.append(dup)
            if self.reason is not None:
                _shut(dup)

    def _deadline_reason(self) -> str:
        return f"not finished within the deadline of {self.pace.deadline:g} s (--deadline)"

    def _watch(self) -> None:
        pace = self.pace
        start = time.monotonic()
        window = pace.stall_window
        tick = min(1.0, window / 20)
        samples: collections.deque[tuple[float, int]] = collections.deque([(start, 0)])
        while not self._done.wait(max(0.0, min(tick, pace.ends_at - time.monotonic()))):
            now = time.monotonic()
            received = self.received
            reason = None
            if now >= pace.ends_at:
                reason = self._deadline_reason()
            elif pace.min_rate > 0:
                samples.append((now, received))
                while len(samples) > 1 and samples[1][0] <= now - window:
                    samples.popleft()  # samples[0]: the newest sample at least a window old
                since, before = samples[0]
                if now - since >= window and received - before < pace.min_rate * window:
                    reason = (
                        f"stalled: {received - before:,} bytes in the last {window:g} s, below the minimum rate "
                        f"{pace.min_rate:g} B/s (--min-rate, --stall-window)"
                    )
            if reason is not None:
                with self._lock:
                    self.reason = reason
                    for sock in self._sockets:
                        _shut(sock)
                return


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the peer
        sock.shutdown(socket.SHUT_RDWR)


#: What an HTTP exchange raises when it fails: urllib's errors, the socket's, and http.client's own (a cut
#: chunked body raises IncompleteRead, a garbled status line BadStatusLine; neither is an OSError).
_NETWORK_ERRORS = (urllib.error.URLError, OSError, http.client.HTTPException)


def record_files(
    record: str,
    *,
    base_url: str = ZENODO,
    timeout: float = 60.0,
    deadline: float = DEADLINE_S,
    min_rate: float = MIN_RATE,
    stall_window: float = STALL_WINDOW_S,
) -> list[RemoteFile]:
    """The files of an archive record, from its JSON API (``/api/records/<id>``); entries are not yet checked.
    The description is read under the same deadline and minimum rate as a download (:class:`_Transfer`)."""
    return _record_files(record, base_url, timeout, _Pace.start(deadline, min_rate, stall_window))


def _record_files(record: str, base_url: str, timeout: float, pace: _Pace) -> list[RemoteFile]:
    if not _RECORD_ID.fullmatch(record):
        raise FetchError(f"--record {_shown(record)}: not a record id (letters, digits, '.', '_', '-')")
    url = f"{check_base_url(base_url)}/api/records/{record}"
    transfer = _Transfer(pace)
    try:
        with transfer:
            response = transfer.open(url, timeout)
            raw = bytearray()
            while len(raw) <= MAX_RECORD_BYTES and (block := transfer.read(response, MAX_RECORD_BYTES + 1 - len(raw))):
                raw += block
        if transfer.reason is not None:
            raise FetchError(f"{url}: cannot read the record ({transfer.reason})")
        if len(raw) > MAX_RECORD_BYTES:
            raise FetchError(f"{url}: the record description is over {MAX_RECORD_BYTES:,} bytes; refused")
        data = load_json(
            bytes(raw), url, error=FetchError
        )  # a record nested 10^5 deep is one line, not a RecursionError
    except (*_NETWORK_ERRORS, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise FetchError(f"{url}: cannot read the record ({transfer.reason or exc})") from exc
    entries = data.get("files", []) if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise FetchError(f"{url}: 'files' is not a list")
    files = []
    for k, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise FetchError(f"{url}: files[{k}] is not an object")
        links = cast("dict[str, Any]", entry.get("links")) if isinstance(entry.get("links"), dict) else {}
        link = links.get("self") or links.get("content") or links.get("download")
        if not isinstance(entry.get("key"), str):
            raise FetchError(f"{url}: files[{k}] has no file name (key {_shown(entry.get('key'))})")
        if not isinstance(link, str):
            raise FetchError(f"{url}: files[{k}] ({_shown(entry.get('key'))}) has no download link")
        files.append(RemoteFile(entry.get("key"), entry.get("size"), entry.get("checksum"), link))  # type: ignore[arg-type]
    if not files:
        raise FetchError(f"{url}: the record lists no files")
    return files


def _digest_of(stream: IO[bytes], algorithm: str) -> str:
    digest = hashlib.new(algorithm, usedforsecurity=False)
    for block in iter(lambda: stream.read(CHUNK), b""):
        digest.update(block)
    return f"{algorithm}:{digest.hexdigest()}"


def _matches(source: Path | IO[bytes], checksum: str) -> bool:
    """Whether the file (a path, or an open file read from its start) has ``checksum``."""
    algorithm, digest = checksum.split(":", 1)
    if isinstance(source, Path):
        with open(source, "rb") as f:
            got = _digest_of(f, algorithm.lower())
    else:
        source.seek(0)
        got = _digest_of(source, algorithm.lower())
    return got == f"{algorithm.lower()}:{digest.lower()}"


def _part_problem(st: os.stat_result) -> str | None:
    """Why a file with status ``st`` (from ``lstat`` or ``fstat``) is not a partial download this user made."""
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})"
    if st.st_nlink > 1:
        return f"has {st.st_nlink} hard links (it is also a file elsewhere)"
    return None


def _open_part(part: Path) -> IO[bytes]:
    """The partial download ``part``, opened for reading and writing (created when absent), never through a symbolic
    link. A ``.part`` that is a link (dangling or not), not a regular file (a FIFO would block, a device be
    written), owned by someone else or hard-linked elsewhere is refused: anyone who could write in the folder could
    plant one to make the fetch overwrite a file outside it. ``O_NOFOLLOW`` and ``O_EXCL`` close the race between
    the check and the open; ``O_NONBLOCK`` keeps a FIFO swapped in meanwhile from blocking the open."""

    def refuse(why: str) -> FetchError:
        return FetchError(f"{part}: the partial download {why}; refused (remove it to download the file again)")

    try:
        before: os.stat_result | None = os.lstat(part)
    except FileNotFoundError:
        before = None
    except OSError as exc:
        raise FetchError(f"{part}: cannot read the partial download ({exc.strerror})") from exc
    if before is not None and (why := _part_problem(before)) is not None:
        raise refuse(why)
    flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    flags |= os.O_CREAT | os.O_EXCL if before is None else 0
    try:
        fd = os.open(part, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refuse("is a symbolic link") from exc
        if exc.errno == errno.EEXIST:
            raise refuse("appeared while it was being created") from exc
        raise FetchError(f"{part}: cannot open the partial download ({exc.strerror})") from exc
    try:
        after = os.fstat(fd)
        why = _part_problem(after)
        if why is None and before is not None and (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            why = "was replaced while it was being opened"
        if why is not None:
            raise refuse(why)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "r+b")
    except BaseException:
        os.close(fd)
        raise


def download(
    remote: RemoteFile,
    directory: Path,
    *,
    timeout: float = 60.0,
    deadline: float = DEADLINE_S,
    min_rate: float = MIN_RATE,
    stall_window: float = STALL_WINDOW_S,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """Download one checked entry (:func:`check_entry`) with resume and checksum; returns its path. The transfer
    stops at the record's size (a server sending more is refused), at the ``deadline`` (s) and when fewer than
    ``min_rate`` bytes/s arrived over the last ``stall_window`` seconds; ``timeout`` bounds one read."""
    return _download(remote, directory, timeout, _Pace.start(deadline, min_rate, stall_window), progress)


def _download(
    remote: RemoteFile,
    directory: Path,
    timeout: float,
    pace: _Pace,
    progress: Callable[[int, int | None], None] | None,
) -> Path:
    if remote.checksum is None or remote.size is None:
        raise FetchError(f"{remote.url}: no checksum or size; check the entry with check_entry first")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FetchError(f"{directory}: cannot make the target folder ({exc.strerror})") from exc
    final = directory / check_name(remote.name, "?")
    if final.resolve().parent != directory.resolve():
        raise FetchError(f"{_shown(remote.name)}: would be written outside {directory}; refused")
    if final.is_file() and _matches(final, remote.checksum):  # is_file: a FIFO planted there would block the read
        return final
    part = directory / f"{remote.name}.part"
    with _open_part(part) as out:
        done = _transfer_into(out, part, remote, timeout, pace, progress)
        if done != remote.size:
            raise FetchError(f"{remote.url}: got {done:,} bytes, expected {remote.size:,}; run again to resume")
        if not _matches(out, remote.checksum):
            out.close()
            part.unlink()
            raise FetchError(f"{remote.url}: checksum mismatch (expected {remote.checksum}); partial file removed")
    os.replace(part, final)
    return final


def _transfer_into(
    out: IO[bytes],
    part: Path,
    remote: RemoteFile,
    timeout: float,
    pace: _Pace,
    progress: Callable[[int, int | None], None] | None,
) -> int:
    """Append the rest of ``remote`` to the open partial file ``out`` (from its current size, with a ``Range``
    request; from byte 0 when the server ignores the range); the bytes the file then holds. On a failure the
    partial file stays for a resume (removed only when empty), and the error says why and how much is kept."""
    size = cast(int, remote.size)
    have = os.fstat(out.fileno()).st_size
    if have > size:
        out.truncate(0)
        have = 0
    request = urllib.request.Request(remote.url)
    if have:
        request.add_header("Range", f"bytes={have}-")
    transfer = _Transfer(pace)
    done = have
    try:
        with transfer:
            response = transfer.open(request, timeout)
            if not (have and response.status == 206):
                out.truncate(0)
                done = 0
            out.seek(done)
            while block := transfer.read(response):
                if done + len(block) > size:
                    out.truncate(0)
                    raise FetchError(f"{remote.url}: the server sent more than the record's {size:,} bytes")
                out.write(block)
                done += len(block)
                if progress is not None:
                    progress(done, size)
        out.flush()
    except _NETWORK_ERRORS as exc:
        _drop_if_empty(out, part)
        why = transfer.reason or f"download interrupted ({exc})"
        raise FetchError(f"{remote.url}: {why}; {done:,} bytes kept in {part}: run the fetch again to resume") from exc
    except BaseException:
        _drop_if_empty(out, part)
        raise
    if done < size and transfer.reason is not None:  # the watchdog's shutdown read as the end of the body
        _drop_if_empty(out, part)
        raise FetchError(
            f"{remote.url}: {transfer.reason}; {done:,} bytes kept in {part}: run the fetch again to resume"
        )
    return done


def _drop_if_empty(out: IO[bytes], part: Path) -> None:
    """Remove the partial file when it holds nothing: a failed first request leaves no empty ``.part`` behind."""
    with contextlib.suppress(OSError):
        out.flush()
        if os.fstat(out.fileno()).st_size == 0:
            part.unlink(missing_ok=True)


def fetch_record(
    record: str,
    directory: str | Path,
    *,
    files: Iterable[str] | None = None,
    base_url: str = ZENODO,
    timeout: float = 60.0,
    max_size: int = MAX_FILE_BYTES,
    deadline: float = DEADLINE_S,
    min_rate: float = MIN_RATE,
    stall_window: float = STALL_WINDOW_S,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> list[Path]:
    """Fetch the record's files (all, or those named in ``files``) into ``directory``. Every wanted entry is
    checked before anything is downloaded (:func:`check_entry`). The whole fetch (the record's description and
    every file) ends within ``deadline`` seconds, and a transfer is stopped when fewer than ``min_rate`` bytes per
    second arrived over its last ``stall_window`` seconds (0: no minimum); ``timeout`` bounds one read. A stopped
    download keeps its partial file: the same call again resumes it."""
    pace = _Pace.start(deadline, min_rate, stall_window)
    wanted = set(files) if files is not None else None
    base_url = check_base_url(base_url)
    remote = _record_files(record, base_url, timeout, pace)
    if wanted is not None:
        missing = wanted - {r.name for r in remote}
        if missing:
            names = [r.name for r in remote]
            listed = ", ".join(_shown(n) for n in names[:10])
            listed += f" and {len(names) - 10} more" if len(names) > 10 else ""
            raise FetchError(f"record {record} has no file(s) {_shown(sorted(missing))}; it has {listed}")
        remote = [r for r in remote if r.name in wanted]
    remote = [check_entry(r, record, base_url, max_size) for r in remote]
    out = []
    for r in remote:
        hook = (lambda done, total, name=r.name: progress(name, done, total)) if progress is not None else None
        out.append(_download(r, Path(directory), timeout, pace, hook))
    return out
