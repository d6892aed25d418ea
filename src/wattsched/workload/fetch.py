"""Download public datasets from their archive records (Zenodo), with required checksums, size bounds and resume.

``fetch_record`` asks the archive's API for the record's files (name, size, checksum, link), checks each entry
(:func:`check_entry`: a plain file name, a link on the archive's own https origin, a checksum, a size within the
limit), then for each wanted file: skips it if it is already there with the right checksum, otherwise downloads
into ``<name>.part`` — continuing a previous partial download with an HTTP ``Range`` request — verifies the
checksum and renames the file into place. An interrupted fetch is resumed by running it again; a corrupt file is
never left under its final name, and nothing is written outside the target folder.

Hand-written on purpose (issue 16 asked for pooch): measured with a loopback server that cuts the first response
after 300 kB of a 1 MB file, ``pooch.retrieve`` (1.9) deletes the partial temporary file on the error and the retry
downloads the whole file again from byte 0 (no ``Range`` header sent either time); its ``requests`` downloader also
follows redirects to any host. A fetch of a multi-GB record over a flaky link must resume, and the links must stay
on the archive's origin, so the 80 lines of urllib below stay. ``tests/test_fetch.py`` guards resume and refusals.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

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
_RECORD_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


class FetchError(RuntimeError):
    """The record or a file could not be fetched or verified (with the URL and why)."""


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
    """``repr`` of a value from the network, cut to 80 characters (an error line never echoes a whole payload)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_base_url(base_url: str) -> str:
    """The archive URL, refused unless https (plain http only on a loopback address, for local mirrors and tests)."""
    scheme, host, _ = _origin(base_url)
    if not host or scheme not in ("https", "http") or (scheme == "http" and not _is_loopback(host)):
        raise FetchError(f"--base-url {base_url!r}: only https archives are fetched from (http only on loopback)")
    return base_url.rstrip("/")


def check_name(name: object, record: str) -> str:
    """A record's file name, usable as a file name in the target folder: no path separator, no ``..``, no control
    character, not hidden; anything else is refused (the name comes from the network)."""
    if (
        not isinstance(name, str)
        or not name
        or len(name) > 255
        or name in (".", "..")
        or name.startswith(".")
        or any(c in name for c in "/\\\0")
        or any(ord(c) < 32 or ord(c) == 127 for c in name)
    ):
        raise FetchError(f"record {record}: file name {_shown(name)} is not a plain file name; refused")
    return name


def check_entry(remote: RemoteFile, record: str, base_url: str, max_size: int = MAX_FILE_BYTES) -> RemoteFile:
    """Refuse a record entry whose name is not plain, whose link leaves the archive's origin (another host, port or
    scheme: ``file://``, ``http://``), that lists no checksum or one of an unknown algorithm, or whose size is
    unknown, negative or above ``max_size``."""
    where = f"record {record}, file {_shown(remote.name)}"
    check_name(remote.name, record)
    if _origin(remote.url) != _origin(base_url):
        raise FetchError(f"{where}: link {_shown(remote.url)} is not on the archive {base_url}; refused")
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


# Only http(s) handlers (no file:, ftp: or data: handler), redirects kept on the origin.
_OPENER = urllib.request.OpenerDirector()
for _handler in (
    urllib.request.ProxyHandler(),  # the environment's proxies, as urllib's default opener
    urllib.request.UnknownHandler(),
    urllib.request.HTTPHandler(),
    urllib.request.HTTPSHandler(),
    urllib.request.HTTPErrorProcessor(),
    urllib.request.HTTPDefaultErrorHandler(),
    _SameOrigin(),
):
    _OPENER.add_handler(_handler)


def record_files(record: str, *, base_url: str = ZENODO, timeout: float = 60.0) -> list[RemoteFile]:
    """The files of an archive record, from its JSON API (``/api/records/<id>``); entries are not yet checked."""
    if not _RECORD_ID.fullmatch(record):
        raise FetchError(f"--record {_shown(record)}: not a record id (letters, digits, '.', '_', '-')")
    url = f"{check_base_url(base_url)}/api/records/{record}"
    try:
        with _OPENER.open(url, timeout=timeout) as response:
            raw = response.read(MAX_RECORD_BYTES + 1)
        if len(raw) > MAX_RECORD_BYTES:
            raise FetchError(f"{url}: the record description is over {MAX_RECORD_BYTES:,} bytes; refused")
        data = json.loads(raw)
    except (urllib.error.URLError, OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise FetchError(f"{url}: cannot read the record ({exc})") from exc
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


def _digest(path: Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm, usedforsecurity=False)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return f"{algorithm}:{digest.hexdigest()}"


def _matches(path: Path, checksum: str) -> bool:
    algorithm, digest = checksum.split(":", 1)
    return _digest(path, algorithm.lower()) == f"{algorithm.lower()}:{digest.lower()}"


def download(
    remote: RemoteFile,
    directory: Path,
    *,
    timeout: float = 60.0,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """Download one checked entry (:func:`check_entry`) with resume and checksum; returns its path. The transfer
    stops at the record's size: a server sending more is refused."""
    if remote.checksum is None or remote.size is None:
        raise FetchError(f"{remote.url}: no checksum or size; check the entry with check_entry first")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FetchError(f"{directory}: cannot make the target folder ({exc.strerror})") from exc
    final = directory / check_name(remote.name, "?")
    if final.resolve().parent != directory.resolve():
        raise FetchError(f"{_shown(remote.name)}: would be written outside {directory}; refused")
    if final.exists() and _matches(final, remote.checksum):
        return final
    part = directory / f"{remote.name}.part"
    have = part.stat().st_size if part.exists() else 0
    if have > remote.size:
        part.unlink()
        have = 0
    request = urllib.request.Request(remote.url)
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            resumed = have and response.status == 206
            with open(part, "ab" if resumed else "wb") as out:
                done = have if resumed else 0
                for block in iter(lambda: response.read(CHUNK), b""):
                    if done + len(block) > remote.size:
                        out.truncate(0)
                        raise FetchError(f"{remote.url}: the server sent more than the record's {remote.size:,} bytes")
                    out.write(block)
                    done += len(block)
                    if progress is not None:
                        progress(done, remote.size)
    except (urllib.error.URLError, OSError) as exc:
        raise FetchError(f"{remote.url}: download interrupted ({exc}); run the fetch again to resume") from exc
    if part.stat().st_size != remote.size:
        raise FetchError(f"{remote.url}: got {part.stat().st_size} bytes, expected {remote.size}; run again to resume")
    if not _matches(part, remote.checksum):
        part.unlink()
        raise FetchError(f"{remote.url}: checksum mismatch (expected {remote.checksum}); partial file removed")
    os.replace(part, final)
    return final


def fetch_record(
    record: str,
    directory: str | Path,
    *,
    files: Iterable[str] | None = None,
    base_url: str = ZENODO,
    timeout: float = 60.0,
    max_size: int = MAX_FILE_BYTES,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> list[Path]:
    """Fetch the record's files (all, or those named in ``files``) into ``directory``. Every wanted entry is
    checked before anything is downloaded (:func:`check_entry`)."""
    wanted = set(files) if files is not None else None
    base_url = check_base_url(base_url)
    remote = record_files(record, base_url=base_url, timeout=timeout)
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
        out.append(download(r, Path(directory), timeout=timeout, progress=hook))
    return out
