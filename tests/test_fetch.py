"""Dataset download against a local HTTP server on loopback: checksums, resume with Range, no corrupt finals; the
security checks of a record (plain names, the archive's own links, a required checksum, bounded sizes)."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.workload.fetch import FetchError, RemoteFile, check_base_url, check_entry, fetch_record

PAYLOAD = bytes(range(256)) * 4000  # ~1 MB
REQUESTS: list[str | None] = []
#: The entries of record 43, set by a test ("{base}" becomes the server's URL).
CUSTOM: list[dict] = []


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
        elif self.path == "/api/records/43":
            body = json.dumps({"files": CUSTOM}).replace("{base}", base).encode()
            self._send(200, body)
        elif self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.2:1/files/other.bin")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/big":
            self._send(200, b"x" * 100)
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
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    REQUESTS.clear()
    CUSTOM.clear()
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
            "--output",
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
    # the old name of --output still works, with a warning (--to ends report's time window, issue 30)
    args = ["data", "fetch", "pm100", "--to", str(tmp_path / "old"), "--record", "42", "--base-url", archive]
    old = CliRunner().invoke(app, args)
    assert old.exit_code == 0, old.output
    assert "--to is deprecated; use --output" in old.output
    assert (tmp_path / "old" / "job_table.parquet").read_bytes() == PAYLOAD
    missing = CliRunner().invoke(app, ["data", "fetch", "pm100", "--record", "42", "--base-url", archive])
    assert missing.exit_code == 2 and "missing option --output" in missing.output


def _entry(key: str, link: str = "{base}/files/other.bin", size: object = 3, checksum: object = "abc") -> dict:
    if checksum == "abc":
        checksum = "md5:" + hashlib.md5(b"abc").hexdigest()
    return {"key": key, "size": size, "checksum": checksum, "links": {"self": link}}


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (_entry("../../escaped.bin"), "not a plain file name"),
        (_entry("sub/x.bin"), "not a plain file name"),
        (_entry("..\\x.bin"), "not a plain file name"),
        (_entry(".."), "not a plain file name"),
        (_entry(".bashrc"), "not a plain file name"),
        (_entry("a\nb"), "not a plain file name"),
        (_entry("x.bin", link="file:///etc/hostname"), "is not on the archive"),
        (_entry("x.bin", link="http://127.0.0.2/files/other.bin"), "is not on the archive"),
        (_entry("x.bin", link="https://{base}/files/other.bin".replace("{base}", "example.org")), "not on the archive"),
        (_entry("x.bin", checksum=None), "lists no checksum"),
        (_entry("x.bin", checksum=""), "lists no checksum"),
        (_entry("x.bin", checksum="crc32:1234"), "unsupported checksum"),
        (_entry("x.bin", size=None), "no valid size"),
        (_entry("x.bin", size=-1), "no valid size"),
        (_entry("x.bin", size="3"), "no valid size"),
        (_entry("x.bin", size=10**15), "above the limit"),
    ],
)
def test_a_bad_record_entry_is_refused_and_nothing_written(tmp_path, archive, entry, why) -> None:
    CUSTOM.append(entry)
    target = tmp_path / "a" / "b"
    with pytest.raises(FetchError, match=why):
        fetch_record("43", target, base_url=archive)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))  # nothing in the target, nothing outside it


def test_a_server_sending_more_than_the_record_says_is_cut_off(tmp_path, archive) -> None:
    CUSTOM.append(_entry("x.bin", link="{base}/big", size=10))
    with pytest.raises(FetchError, match="more than the record's 10 bytes"):
        fetch_record("43", tmp_path, base_url=archive)
    assert not (tmp_path / "x.bin").exists()


def test_a_redirect_off_the_archive_is_refused(tmp_path, archive) -> None:
    CUSTOM.append(_entry("x.bin", link="{base}/redirect"))
    with pytest.raises(FetchError, match="off the archive"):
        fetch_record("43", tmp_path, base_url=archive)
    assert not (tmp_path / "x.bin").exists()


def test_the_size_limit_is_an_option(tmp_path, archive) -> None:
    with pytest.raises(FetchError, match="above the limit of 1,000"):
        fetch_record("42", tmp_path, files=["job_table.parquet"], base_url=archive, max_size=1000)
    assert fetch_record("42", tmp_path, files=["other.bin"], base_url=archive, max_size=1000)[0].read_bytes() == b"abc"


@pytest.mark.parametrize("url", ["http://zenodo.org", "file:///etc", "ftp://zenodo.org", "zenodo.org", "https://"])
def test_only_https_archives(url) -> None:
    with pytest.raises(FetchError, match="only https"):
        check_base_url(url)
    assert check_base_url("https://zenodo.org/") == "https://zenodo.org"
    assert check_base_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000"  # loopback: local mirrors, tests


def test_check_entry_keeps_a_good_entry() -> None:
    good = RemoteFile("job_table.parquet", 3, "MD5:" + "a" * 32, "https://zenodo.org/api/records/1/files/x/content")
    assert check_entry(good, "1", "https://zenodo.org") is good
    with pytest.raises(FetchError, match=r"record 1, file 'job_table\.parquet': the record lists no checksum"):
        check_entry(RemoteFile("job_table.parquet", 3, None, good.url), "1", "https://zenodo.org")


@pytest.mark.parametrize("record", ["../1", "1/../../x", "", "a b"])
def test_a_record_id_is_not_a_path(tmp_path, record) -> None:
    with pytest.raises(FetchError, match="not a record id"):
        fetch_record(record, tmp_path)


def test_data_fetch_cli_refuses_in_one_line(tmp_path, archive) -> None:
    CUSTOM.append(_entry("../../escaped.bin"))
    args = ["data", "fetch", "pm100", "--output", str(tmp_path / "t"), "--record", "43", "--base-url", archive]
    result = CliRunner().invoke(app, [*args, "--file", "../../escaped.bin"])
    assert result.exit_code != 0
    assert "not a plain file name" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "escaped.bin").exists() and not (tmp_path.parent / "escaped.bin").exists()
    CUSTOM[:] = [_entry("x.bin", checksum=None)]
    result = CliRunner().invoke(app, [*args, "--file", "x.bin"])
    assert result.exit_code != 0 and "checksum verified" not in result.output
    assert "lists no checksum" in result.output


def test_errors_never_echo_a_whole_payload(tmp_path, archive) -> None:
    CUSTOM.append(_entry("../" + "x" * 1_000_000))
    with pytest.raises(FetchError) as info:
        fetch_record("43", tmp_path, base_url=archive)
    assert "not a plain file name" in str(info.value) and len(str(info.value)) < 300


@pytest.mark.parametrize("key", [None, ["a"], 5])
def test_an_entry_without_a_name_is_refused(tmp_path, archive, key) -> None:
    CUSTOM.append(_entry("x") | {"key": key})
    with pytest.raises(FetchError, match="has no file name"):
        fetch_record("43", tmp_path, files=["x"], base_url=archive)


def test_a_target_that_is_a_file_is_one_error(tmp_path, archive) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(FetchError, match="cannot make the target folder"):
        fetch_record("42", tmp_path / "f", files=["other.bin"], base_url=archive)
