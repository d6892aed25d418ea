"""Eurora instances on disk: the ``*.log_crypt`` files of a path, and their distinct job lines (the instances
overlap: the first occurrence of each job id is kept, identical repeats counted, different ones rejected)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wattsched.core.schema import WorkloadError

#: File name ending of an Eurora job instance.
EURORA_SUFFIX = ".log_crypt"


def is_eurora_dir(path: str | Path) -> bool:
    """True when ``path`` is a directory with an Eurora instance below it (for ``load_workload``'s dispatch)."""
    path = Path(path)
    return path.is_dir() and next(path.rglob(f"*{EURORA_SUFFIX}"), None) is not None


def instance_files(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    """The instance files of a file, a directory (every ``*.log_crypt`` below it, sorted) or a list of either."""
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    if not items:
        raise WorkloadError("no Eurora instance given")
    files: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found = sorted(path.rglob(f"*{EURORA_SUFFIX}"))
            if not found:
                raise WorkloadError(f"{path}: no *{EURORA_SUFFIX} instance below this directory")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise WorkloadError(f"{path}: no such file or directory")
    return files


class InstanceLines:
    """The distinct job lines of the instances (first occurrence of each job id), with where they came from."""

    def __init__(self, files: list[Path]) -> None:
        self.src: list[str] = []
        self.line: list[int] = []
        self.text: list[str] = []
        self.conflicts: list[dict[str, Any]] = []
        self.per_file: list[dict[str, Any]] = []
        self.n_records = self.n_duplicates = self.n_blank = 0
        first: dict[str, int] = {}
        for path in files:
            try:
                text = path.read_bytes().decode("utf-8", errors="replace")
            except OSError as exc:
                raise WorkloadError(f"{path}: cannot read: {exc}") from None
            source = str(path)
            ids: set[str] = set()
            n_lines = 0
            for number, raw in enumerate(text.split("\n"), start=1):
                body = raw.strip()
                if not body:
                    self.n_blank += 1
                    continue
                n_lines += 1
                jid = body.split(";", 1)[0].strip()
                ids.add(jid)
                kept = first.get(jid) if jid else None
                if kept is None:
                    if jid:
                        first[jid] = len(self.text)
                    self.src.append(source)
                    self.line.append(number)
                    self.text.append(body)
                elif self.text[kept] == body:
                    self.n_duplicates += 1
                else:
                    why = (
                        f"job id {jid} was already read with different content at {self.src[kept]}:"
                        f"{self.line[kept]} (the first occurrence is the one used)"
                    )
                    self.conflicts.append(
                        {
                            "source": source,
                            "line": number,
                            "job_id": _int_or_none(jid),
                            "field": "job_id",
                            "reason": why,
                            "raw": body,
                        }
                    )
            self.n_blank -= text.endswith("\n")  # the empty string after the final newline is not a line
            self.n_records += n_lines
            self.per_file.append({"path": source, "lines": n_lines, "job_ids": len(ids)})


def _int_or_none(text: str) -> int | None:
    """A job id text as an integer for the rejects table, None when it is not plain digits."""
    return int(text) if text.isdigit() and len(text) < 19 else None
