"""Dataset download against a local HTTP server on loopback: checksums, resume with Range, no corrupt finals."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.workload.fetch import FetchError, fetch_record

PAYLOAD = bytes(range(256)) * 4000  # ~1 MB
REQUESTS: list[str | None] = []


class _Archive(BaseHTTPRequestHandler):
    checksum = "md5:" + hashlib.md5(PAYLOAD).hexdigest()

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        base = f"http://127.0.0.1:{self.server.server_port}"
        if self.path == "/api/records/42":
            body = json.dumps(
                {
                    "files": [
                        {
                            "key": "job_table.parquet",
                            "size": len(PAYLOAD),
                            "checksum": type(self).checksum,
                            "links": {"self": f"{base}/files/job_table.parquet"},
                        },
                        {
                            "key": "other.bin",
                            "size": 3,
                            "checksum": "md5:" + hashlib.md5(b"abc").hexdigest(),
                            "links": {"self": f"{base}/files/other.bin"},
                        },
                    ]
                }
            ).encode()
            self._send(200, body)
        elif self.path == "/files/job_table.parquet":
            REQUESTS.append(self.headers.get("Range"))
            start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
            self._send(206 if start else 200, PAYLOAD[start:])
        elif self.path == "/files/other.bin":
            self._send(200, b"abc")
        else:
            self._send(404, b"no")

    def _send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def archive():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Archive)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    REQUESTS.clear()
    _Archive.checksum = "md5:" + hashlib.md5(PAYLOAD).hexdigest()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def test_fetch_resume_and_skip(tmp_path, archive) -> None:
    (tmp_path / "job_table.parquet.part").write_bytes(PAYLOAD[:300_000])  # an interrupted earlier fetch
    paths = fetch_record("42", tmp_path, files=["job_table.parquet"], base_url=archive)
    assert paths[0].read_bytes() == PAYLOAD and REQUESTS == ["bytes=300000-"]
    assert not (tmp_path / "job_table.parquet.part").exists()
    fetch_record("42", tmp_path, files=["job_table.parquet"], base_url=archive)
    assert REQUESTS == ["bytes=300000-"]  # already there with the right checksum: not downloaded again
    assert {p.name for p in fetch_record("42", tmp_path, base_url=archive)} == {"job_table.parquet", "other.bin"}


def test_a_checksum_mismatch_leaves_no_file(tmp_path, archive) -> None:
    _Archive.checksum = "md5:" + "0" * 32
    with pytest.raises(FetchError, match="checksum mismatch"):
        fetch_record("42", tmp_path, files=["job_table.parquet"], base_url=archive)
    assert not list(tmp_path.iterdir())


def test_errors_say_what_is_missing(tmp_path, archive) -> None:
    with pytest.raises(FetchError, match="has no file"):
        fetch_record("42", tmp_path, files=["nope.parquet"], base_url=archive)
    with pytest.raises(FetchError, match="cannot read the record"):
        fetch_record("7", tmp_path, base_url=archive)


def test_data_fetch_cli(tmp_path, archive) -> None:
    result = CliRunner().invoke(
        app,
        [
            "data",
            "fetch",
            "pm100",
            "--to",
            str(tmp_path),
            "--record",
            "42",
            "--base-url",
            archive,
            "--file",
            "job_table.parquet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "job_table.parquet").read_bytes() == PAYLOAD
