"""Dataset download against a local HTTP server on loopback: checksums, resume with Range, no corrupt finals; the
security checks of a record (plain names, the archive's own links, a required checksum, bounded sizes); issue 31:
no hang on a trickling server (deadline, minimum rate), no write through a planted ``.part``, no raw control
characters from the network on the terminal."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from wattsched.api.workloads import fetch_dataset
from wattsched.cli import app
from wattsched.cli.data import data_fetch
from wattsched.workload import fetch
from wattsched.workload.fetch import FetchError, RemoteFile, check_base_url, check_entry, fetch_record

PAYLOAD = bytes(range(256)) * 4000  # ~1 MB
REQUESTS: list[str | None] = []
#: The entries of record 43, set by a test ("{base}" becomes the server's URL).
CUSTOM: list[dict] = []
#: The file /trickle serves (with Range), a byte every TRICKLE_PAUSE s while SLOW[0], at once otherwise.
TRICKLE = bytes(range(256)) * 4
TRICKLE_PAUSE = 0.1
SLOW = [True]
#: The longest a slow endpoint keeps a connection (s): a test of the unfixed fetch fails instead of hanging.
SLOW_FOR = 6.0


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
        elif self.path == "/api/records/49":  # a record description nested 10^5 deep
            self._send(200, b'{"files": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
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
        elif self.path == "/api/records/44":  # a record description dripped a byte at a time
            body = json.dumps({"files": [_entry("x.bin")]}).replace("{base}", base).encode()
            self._drip(200, body, pause=TRICKLE_PAUSE)
        elif self.path == "/trickle":
            REQUESTS.append(self.headers.get("Range"))
            start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
            if SLOW[0]:
                self._drip(206 if start else 200, TRICKLE[start:], pause=TRICKLE_PAUSE)
            else:
                self._send(206 if start else 200, TRICKLE[start:])
        elif self.path == "/steady":  # fast enough for any minimum rate, but never done in time
            self._drip(200, b"s" * 10**6, pause=0.05, step=100)
        elif self.path == "/slow-headers":  # a header line that never ends
            try:
                self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                self._drip_raw(b"a" * 10**5, pause=TRICKLE_PAUSE, step=1)
            except OSError:
                pass
        elif self.path == "/evil-status":  # a reason phrase with terminal escapes
            self.send_response(404, "\x1b[2J\x9bgone")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self._send(404, b"no")

    def _drip(self, code: int, body: bytes, pause: float, step: int = 1) -> None:
        """Send ``body`` ``step`` bytes every ``pause`` s, for at most SLOW_FOR s (a client gone ends it)."""
        try:
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self._drip_raw(body, pause, step)
        except OSError:  # the client stopped listening: what the tests want
            pass

    def _drip_raw(self, body: bytes, pause: float, step: int) -> None:
        end = time.monotonic() + SLOW_FOR
        for k in range(0, len(body), step):
            if time.monotonic() > end:
                return
            self.wfile.write(body[k : k + step])
            self.wfile.flush()
            time.sleep(pause)

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
    SLOW[0] = True
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


# --- issue 31, item 4: nothing hangs -------------------------------------------------------------------------------


def _trickle_entry(link: str = "{base}/trickle", data: bytes = TRICKLE) -> dict:
    return {
        "key": "x.bin",
        "size": len(data),
        "checksum": "md5:" + hashlib.md5(data).hexdigest(),
        "links": {"self": link},
    }


def test_a_trickling_server_is_stopped_by_the_minimum_rate_and_the_fetch_resumes(tmp_path, archive) -> None:
    """A byte every 0.1 s never trips the 60 s read timeout; the minimum rate (100 B/s over 0.5 s) stops it."""
    CUSTOM.append(_trickle_entry())
    began = time.monotonic()
    with pytest.raises(FetchError) as info:
        fetch_record("43", tmp_path, base_url=archive, min_rate=100, stall_window=0.5)
    took = time.monotonic() - began
    message = str(info.value)
    assert took < 3, f"{took:.1f} s: the stall was not caught"
    assert message.startswith(f"{archive}/trickle: stalled: ") and "\n" not in message
    assert "bytes in the last 0.5 s, below the minimum rate 100 B/s (--min-rate, --stall-window)" in message
    part = tmp_path / "x.bin.part"
    kept = part.read_bytes()
    assert 0 < len(kept) < len(TRICKLE) and TRICKLE.startswith(kept)  # the partial file stays for a resume
    assert f"bytes kept in {part}: run the fetch again to resume" in message
    SLOW[0] = False
    assert fetch_record("43", tmp_path, base_url=archive)[0].read_bytes() == TRICKLE
    assert list(REQUESTS) == [None, f"bytes={len(kept)}-"]  # resumed where the stalled download stopped
    assert not part.exists()


def test_the_deadline_ends_a_download_that_keeps_a_pace(tmp_path, archive) -> None:
    """2,000 B/s passes any minimum rate; a 1 MB file still must not hold the fetch past its deadline."""
    CUSTOM.append(_trickle_entry("{base}/steady", b"s" * 10**6))
    began = time.monotonic()
    with pytest.raises(FetchError, match=r"not finished within the deadline of 1\.5 s \(--deadline\)") as info:
        fetch_record("43", tmp_path, base_url=archive, deadline=1.5, min_rate=0)
    assert time.monotonic() - began < 3.5
    assert (tmp_path / "x.bin.part").stat().st_size > 0 and "bytes kept in" in str(info.value)


def test_a_header_that_never_ends_is_stopped(tmp_path, archive) -> None:
    """The watchdog also ends an exchange blocked in the status line or the headers (no body byte yet)."""
    CUSTOM.append(_trickle_entry("{base}/slow-headers"))
    began = time.monotonic()
    with pytest.raises(FetchError, match=r"slow-headers: stalled: 0 bytes in the last 0\.5 s"):
        fetch_record("43", tmp_path, base_url=archive, min_rate=100, stall_window=0.5)
    assert time.monotonic() - began < 3
    assert not (tmp_path / "x.bin.part").exists()  # nothing arrived: no empty partial file left


def test_a_trickled_record_description_is_stopped(tmp_path, archive) -> None:
    began = time.monotonic()
    with pytest.raises(FetchError, match=r"records/44: cannot read the record \(not finished within the deadline"):
        fetch_record("44", tmp_path, base_url=archive, deadline=1.0)
    assert time.monotonic() - began < 3


def test_data_fetch_cli_stops_a_stalled_download_in_one_line(tmp_path, archive) -> None:
    CUSTOM.append(_trickle_entry())
    args = ["data", "fetch", "pm100", "--output", str(tmp_path), "--record", "43", "--base-url", archive]
    result = CliRunner().invoke(app, [*args, "--file", "x.bin", "--min-rate", "100", "--stall-window", "0.5"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "/trickle: stalled: " in lines[0] and str(tmp_path / "x.bin.part") in lines[0]
    assert (tmp_path / "x.bin.part").stat().st_size > 0
    bad = CliRunner().invoke(app, [*args, "--min-rate", "-1"])
    assert bad.exit_code != 0 and "--min-rate must be a number of bytes per second ≥ 0" in bad.output


@pytest.mark.parametrize(
    ("option", "why"),
    [
        ({"deadline": 0}, "--deadline must be a positive number of seconds, got 0"),
        ({"deadline": float("nan")}, "--deadline must be a positive number of seconds, got nan"),
        ({"min_rate": -1}, "--min-rate must be a number of bytes per second"),
        ({"min_rate": float("inf")}, "--min-rate must be a number of bytes per second"),
        ({"stall_window": 0}, "--stall-window must be a positive number of seconds"),
    ],
)
def test_limits_out_of_range_are_refused_before_any_request(tmp_path, option, why) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        fetch_dataset("pm100", tmp_path, base_url="http://127.0.0.1:9", **option)
    assert list(tmp_path.iterdir()) == []


def test_the_cli_defaults_are_the_api_defaults() -> None:
    """data.py writes the defaults as literals (importing fetch would load urllib for `wattsched --help`)."""
    import inspect

    defaults = {name: p.default for name, p in inspect.signature(data_fetch).parameters.items()}
    assert defaults["deadline"] == fetch.DEADLINE_S == 86_400
    assert defaults["min_rate"] == fetch.MIN_RATE == 1024
    assert defaults["stall_window"] == fetch.STALL_WINDOW_S == 60


# --- issue 31, item 6: a planted .part --------------------------------------------------------------------------


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlinked_part_is_refused_and_its_target_untouched(tmp_path, archive, dangling) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim"
    if not dangling:
        victim.write_bytes(b"secret")  # shorter than the file: the unfixed fetch appended to it with a Range request
    target = tmp_path / "t"
    target.mkdir()
    part = target / "job_table.parquet.part"
    part.symlink_to(victim)
    with pytest.raises(FetchError) as info:
        fetch_record("42", target, files=["job_table.parquet"], base_url=archive)
    assert str(info.value) == (
        f"{part}: the partial download is a symbolic link; refused (remove it to download the file again)"
    )
    assert (victim.read_bytes() == b"secret") if not dangling else not victim.exists()
    assert part.is_symlink() and not (target / "job_table.parquet").exists() and REQUESTS == []


def test_data_fetch_cli_names_a_symlinked_part(tmp_path, archive) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"secret")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "other.bin.part").symlink_to(victim)
    args = ["data", "fetch", "pm100", "--output", str(tmp_path / "t"), "--record", "42", "--base-url", archive]
    result = CliRunner().invoke(app, [*args, "--file", "other.bin"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert f"error: {tmp_path / 't' / 'other.bin.part'}: the partial download is a symbolic link" in result.output
    assert victim.read_bytes() == b"secret"


@pytest.mark.parametrize("kind", ["hardlink", "fifo", "directory", "other-owner"])
def test_a_part_that_is_not_our_plain_file_is_refused(tmp_path, archive, monkeypatch, kind) -> None:
    target = tmp_path / "t"
    target.mkdir()
    part = target / "other.bin.part"
    outside = tmp_path / "victim"
    outside.write_bytes(b"x")
    if kind == "hardlink":
        os.link(outside, part)
    elif kind == "fifo":
        os.mkfifo(part)  # opening it to write would block until a reader came
    elif kind == "directory":
        part.mkdir()
    else:
        part.write_bytes(b"a")
        monkeypatch.setattr(os, "getuid", lambda: os.stat(part).st_uid + 1)
    why = {
        "hardlink": "has 2 hard links (it is also a file elsewhere)",
        "fifo": "is not a regular file",
        "directory": "is not a regular file",
        "other-owner": "is owned by uid",
    }[kind]
    raised: list[BaseException] = []

    def run() -> None:
        try:
            fetch_record("42", target, files=["other.bin"], base_url=archive)
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=run, daemon=True)  # the unfixed fetch blocked for ever opening the FIFO
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "the fetch hung on the .part"
    assert len(raised) == 1 and isinstance(raised[0], FetchError)
    assert re.match(f"^{re.escape(str(part))}: the partial download {re.escape(why)}", str(raised[0]))
    assert outside.read_bytes() == b"x" and not (target / "other.bin").exists()


def test_a_genuine_partial_file_still_resumes(tmp_path, archive) -> None:
    part = tmp_path / "job_table.parquet.part"
    part.write_bytes(PAYLOAD[:123_456])
    os.chmod(part, 0o600)
    assert fetch_record("42", tmp_path, files=["job_table.parquet"], base_url=archive)[0].read_bytes() == PAYLOAD
    assert REQUESTS == ["bytes=123456-"]


# --- issue 31, item 7: names and words from the network are printable ---------------------------------------------

_UNPRINTABLE = ["a\x9bb.bin", "a\u202eb.bin", "a\x1b[31mb.bin", "a\x00b.bin", "a\nb.bin"]


def _raw_controls(text: str) -> list[str]:
    """The characters of ``text`` that would reach a terminal unescaped and are not printable (the line ends of
    the output itself aside)."""
    return [c for c in text if not c.isprintable() and c != "\n"]


@pytest.mark.parametrize("name", _UNPRINTABLE)
def test_a_name_with_control_or_bidi_characters_is_refused_and_shown_escaped(tmp_path, archive, name) -> None:
    CUSTOM.append(_entry(name))
    with pytest.raises(FetchError) as info:
        fetch_record("43", tmp_path / "t", base_url=archive)
    message = str(info.value)
    assert f"file name {name!r} is not a plain file name" in message and "non-printable character" in message
    assert message.isprintable() and not (tmp_path / "t").exists()
    args = ["data", "fetch", "pm100", "--output", str(tmp_path / "t"), "--record", "43", "--base-url", archive]
    result = CliRunner().invoke(app, [*args, "--file", name])
    assert result.exit_code != 0 and repr(name) in result.output and _raw_controls(result.output) == []
    assert not (tmp_path / "t").exists()


def test_names_listed_in_an_error_are_escaped(tmp_path, archive) -> None:
    CUSTOM.extend(_entry(name) for name in _UNPRINTABLE)
    args = ["data", "fetch", "pm100", "--output", str(tmp_path), "--record", "43", "--base-url", archive]
    result = CliRunner().invoke(app, [*args, "--file", "nope\u202e.bin"])
    assert result.exit_code != 0 and "has no file(s)" in result.output
    assert "\\x9b" in result.output and "\\u202e" in result.output and _raw_controls(result.output) == []


@pytest.mark.parametrize(
    "link", ["{base}/files/\x9b.bin", "{base}/files/\u202e.bin", "{base}/files/a b", "{base}/\x1b"]
)
def test_a_link_that_is_not_printable_ascii_is_refused(tmp_path, archive, link) -> None:
    CUSTOM.append(_entry("x.bin", link=link))
    with pytest.raises(FetchError, match="is not printable ASCII") as info:
        fetch_record("43", tmp_path, base_url=archive)
    assert str(info.value).isprintable() and not list(tmp_path.iterdir())


def test_the_servers_own_words_are_escaped(tmp_path, archive) -> None:
    """An HTTP reason phrase is the server's text: its escapes must not reach the terminal."""
    CUSTOM.append(_entry("x.bin", link="{base}/evil-status"))
    args = ["data", "fetch", "pm100", "--output", str(tmp_path), "--record", "43", "--base-url", archive]
    result = CliRunner().invoke(app, [*args, "--file", "x.bin"])
    assert result.exit_code != 0 and "HTTP Error 404: \\x1b[2J\\x9bgone" in result.output
    assert _raw_controls(result.output) == [] and not list(tmp_path.iterdir())


def test_a_record_nested_too_deep_is_one_line(tmp_path, archive) -> None:
    """Issue 31, item 8: a record description nested 10^5 deep was a RecursionError; it is refused naming the URL
    and the depth, before it is parsed."""
    with pytest.raises(FetchError, match=r"records/49.*(deep|nest)") as caught:
        fetch_record("49", tmp_path, base_url=archive)
    assert "\n" not in str(caught.value) and not list(tmp_path.iterdir())
