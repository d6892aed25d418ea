"""Download public datasets from their archive records (Zenodo), with checksums and resume.

``fetch_record`` asks the archive's API for the record's files (name, size, ``md5:`` checksum, link), then for
each wanted file: skips it if it is already there with the right checksum, otherwise downloads into
``<name>.part`` — continuing a previous partial download with an HTTP ``Range`` request — verifies the checksum
and renames the file into place. An interrupted fetch is resumed by running it again; a corrupt file is never
left under its final name.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

#: PM100 (Marconi100 job power) on Zenodo: the later version of the record that holds ``job_table.parquet``.
PM100_RECORD = "10127767"
ZENODO = "https://zenodo.org"
CHUNK = 1 << 20


class FetchError(RuntimeError):
    """The record or a file could not be fetched or verified (with the URL and why)."""


@dataclass(frozen=True)
class RemoteFile:
    name: str
    size: int | None
    checksum: str | None  # "md5:<hex>"
    url: str


def record_files(record: str, *, base_url: str = ZENODO, timeout: float = 60.0) -> list[RemoteFile]:
    """The files of an archive record, from its JSON API (``/api/records/<id>``)."""
    url = f"{base_url.rstrip('/')}/api/records/{record}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            data = json.load(response)
    except (urllib.error.URLError, OSError, json.JSONDecodeError) as exc:
        raise FetchError(f"{url}: cannot read the record ({exc})") from exc
    files = []
    for entry in data.get("files", []):
        links = entry.get("links", {})
        link = links.get("self") or links.get("content") or links.get("download")
        if not link:
            raise FetchError(f"{url}: file {entry.get('key')!r} has no download link")
        files.append(RemoteFile(entry["key"], entry.get("size"), entry.get("checksum"), link))
    if not files:
        raise FetchError(f"{url}: the record lists no files")
    return files


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return f"md5:{digest.hexdigest()}"


def download(
    remote: RemoteFile,
    directory: Path,
    *,
    timeout: float = 60.0,
    progress: Callable[[int, int | None], None] | None = None,
) -> Path:
    """Download one file with resume and checksum; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / remote.name
    if final.exists() and (remote.checksum is None or _md5(final) == remote.checksum):
        return final
    part = directory / f"{remote.name}.part"
    have = part.stat().st_size if part.exists() else 0
    if remote.size is not None and have > remote.size:
        part.unlink()
        have = 0
    request = urllib.request.Request(remote.url)
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            resumed = have and response.status == 206
            with open(part, "ab" if resumed else "wb") as out:
                done = have if resumed else 0
                for block in iter(lambda: response.read(CHUNK), b""):
                    out.write(block)
                    done += len(block)
                    if progress is not None:
                        progress(done, remote.size)
    except (urllib.error.URLError, OSError) as exc:
        raise FetchError(f"{remote.url}: download interrupted ({exc}); run the fetch again to resume") from exc
    if remote.size is not None and part.stat().st_size != remote.size:
        raise FetchError(f"{remote.url}: got {part.stat().st_size} bytes, expected {remote.size}; run again to resume")
    if remote.checksum is not None:
        if not remote.checksum.startswith("md5:"):
            raise FetchError(f"{remote.url}: unsupported checksum {remote.checksum!r}")
        got = _md5(part)
        if got != remote.checksum:
            part.unlink()
            raise FetchError(f"{remote.url}: checksum mismatch ({got} ≠ {remote.checksum}); partial file removed")
    os.replace(part, final)
    return final


def fetch_record(
    record: str,
    directory: str | Path,
    *,
    files: Iterable[str] | None = None,
    base_url: str = ZENODO,
    timeout: float = 60.0,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> list[Path]:
    """Fetch the record's files (all, or those named in ``files``) into ``directory``."""
    wanted = set(files) if files is not None else None
    remote = record_files(record, base_url=base_url, timeout=timeout)
    if wanted is not None:
        missing = wanted - {r.name for r in remote}
        if missing:
            raise FetchError(f"record {record} has no file(s) {sorted(missing)}; it has {[r.name for r in remote]}")
        remote = [r for r in remote if r.name in wanted]
    out = []
    for r in remote:
        hook = (lambda done, total, name=r.name: progress(name, done, total)) if progress is not None else None
        out.append(download(r, Path(directory), timeout=timeout, progress=hook))
    return out
