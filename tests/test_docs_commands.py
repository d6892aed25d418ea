"""Every command that README.md and docs/*.md print runs, exactly as printed (issue 16, deliverable 3).

A reader follows a page top to bottom, so the blocks of one page run in document order in one working directory: a
temporary copy of the repository's layout (its top-level entries linked; ``.venv``: the environment running the
tests) beside a ``shared/data``
link to the shared data, so that ``.venv/bin/wattsched`` and ``../shared/data/...`` resolve as printed from the
repository root. The code under test is this checkout's ``src`` (``PYTHONPATH``), whatever the venv was installed
from. A block selected alone (``-k``) first runs the blocks above it on its page.

What is checked, per fenced block (test id ``page:line`` of the opening fence):

- ``bash``/``sh``/``shell`` blocks run as one ``bash -e`` script; exit 0 required.
- ``console`` blocks (and any block whose lines start with ``$ ``): the ``$ `` lines run; the lines below a command
  are its expected output, matched loosely (whitespace collapsed, numbers masked, ``...`` lines ignored).
- ``toml``/``yaml``/``json`` blocks must parse; ``python`` blocks run (``python -``).
- Markers, HTML comments directly above the fence (invisible on the site), say what else the test must do:

  ``<!-- docs-test: file NAME -->``    save the block as NAME in the page's directory before the page's commands run
                                       (a spec that a command above or below it uses)
  ``<!-- docs-test: spec NAME -->``    a campaign spec shown as an example: saved as NAME and validated by the campaign
                                       loader (relative paths resolved from the page's directory)
  ``<!-- docs-test: quick ... -->``    the block is long: the lines after ``quick`` run instead (its quick variant);
                                       the page must state the block's run time (checked)
  ``<!-- docs-test: replace "A" "B" ... -->`` the block runs with A replaced by B (and so on, pairs): a smaller
                                       size in the test, the command otherwise as printed; run time stated (checked)
  ``<!-- docs-test: slow -->``         over ~10 s: only in the slow set (``-m slow``); run time stated (checked)
  ``<!-- docs-test: continue -->``     a python block that continues the page's previous python blocks
  ``<!-- docs-test: env NAME=VALUE ... -->`` the block runs with these variables set: what a block above told the
                                       reader to ``export`` in their shell (each block runs in its own)
  ``<!-- docs-test: skip REASON -->``  not run: only for what CI lacks (a download, a Slurm cluster, ``make``);
                                       every skip is listed by ``-ra`` with its reason
  ``<!-- docs-test: timed -->``        the first run time in the prose just above is the whole block's, as printed:
                                       measured by ``bench/doc_durations.py`` (tests/test_docs_durations.py)

New blocks are found by themselves: there is no list of blocks here.

A line of a ``quick`` variant that another page's ``quick`` variant runs identically (README.md and
docs/reproduce*.md run the same one-seed reproduction of paper 000, about a minute) runs once per test session:
the other page gets a copy of what it wrote in its working directory (:class:`SharedRuns`, across xdist workers;
a page waits while another computes the line). Every such line still runs, as printed, in a fresh page directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT, SHARED_DATA, require_data

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
SHELL_LANGS = {"bash", "sh", "shell", "console", "shell-session"}
DATA_LANGS = {"toml", "yaml", "yml", "json"}
FENCE = re.compile(r"^(?P<indent>\s{0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)")
MARKER = re.compile(r"<!--\s*docs-test:\s*(?P<body>.*?)\s*-->", re.S)
# A stated run time: "about 70 s", "≈ 2.5 hours", "at most 3 minutes", "40 min", "1 h 10 min".
DURATION = re.compile(r"\d[\d.,]*\s*(?:s|sec|seconds?|min|minutes?|h|hours?)\b")
TIMEOUT_S = 900


@dataclass
class Block:
    """One fenced block of a page, with the markers written directly above it."""

    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    context: str  # the prose just above the block, where a run time may be stated
    markers: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        page = self.page.relative_to(REPO_ROOT) if self.page.is_relative_to(REPO_ROOT) else self.page.name
        return f"{page}:{self.line}"

    @property
    def prompts(self) -> bool:
        return any(line.startswith("$ ") for line in self.text.splitlines())

    @property
    def kind(self) -> str | None:
        if self.lang in SHELL_LANGS or (self.lang == "" and self.prompts):
            return "shell"
        if self.lang in {"python", "py", "python3"}:
            return "python"
        if self.lang in DATA_LANGS:
            return "data"
        return None


def _parse_marker(body: str) -> tuple[str, str]:
    head, _, rest = body.partition("\n")
    key, _, arg = head.strip().partition(" ")
    return key, (arg + ("\n" + rest if rest else "")).strip()


def extract_blocks(page: Path) -> list[Block]:
    """The fenced blocks of a markdown page that the test can run or validate, in document order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence = opening.group("fence")
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        markers: dict[str, str] = {}
        j = i - 1
        while j >= 0 and lines[j].rstrip().endswith("-->"):
            start = j
            while start > 0 and "<!--" not in lines[start]:
                start -= 1
            found = MARKER.search("\n".join(lines[start : j + 1]))
            if found is None:
                break
            key, arg = _parse_marker(found.group("body"))
            markers[key] = arg
            j = start - 1
        prose = "\n".join(lines[max(0, j - 4) : j + 1])
        text = textwrap.dedent("\n".join(lines[i + 1 : end]))  # a block inside a list item is indented
        block = Block(page, i + 1, opening.group("info").lower(), text, prose, markers)
        if block.kind is not None:
            blocks.append(block)
        i = end + 1
    return blocks


BLOCKS = [block for page in PAGES for block in extract_blocks(page)]
KNOWN_MARKERS = {"file", "spec", "quick", "replace", "slow", "continue", "skip", "env", "timed"}
LONG_MARKERS = {"quick", "replace", "slow"}


# Pages that start a Slurm testbed join the tests marked slurm (tests/conftest.py): one testbed at a time
TESTBED_PAGES = {b.page for b in BLOCKS if "skip" not in b.markers and "testbed up" in b.text}


def _param(block: Block) -> object:
    # a page's blocks run in order in one folder: under pytest-xdist (make test) they all go to one worker
    group = "slurm" if block.page in TESTBED_PAGES else f"docs:{block.page.name}"
    marks = [pytest.mark.xdist_group(group)]
    if "slow" in block.markers:
        marks.append(pytest.mark.slow)
    return pytest.param(block, id=block.id, marks=marks)


# --------------------------------------------------------------------------------------------------------------
# The working directories: one per page, laid out like the repository root beside ../shared/data.


class Pages:
    """The working directory of each page and how far its blocks have run."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.done: dict[Path, int] = {}
        self.dirs: dict[Path, Path] = {}

    def workdir(self, page: Path) -> Path:
        if page not in self.dirs:
            root = self.base / page.stem
            (root / "shared").mkdir(parents=True)
            (root / "shared" / "data").symlink_to(SHARED_DATA, target_is_directory=True)
            repo = root / "repo"
            repo.mkdir()
            for entry in REPO_ROOT.iterdir():
                if entry.name not in {".git", ".venv", "site"} and not entry.name.startswith(".pytest"):
                    (repo / entry.name).symlink_to(entry.resolve(), target_is_directory=entry.is_dir())
            # .venv/bin/... as printed: the environment running the tests (the repository's .venv under make)
            venv = Path(sys.prefix) if sys.prefix != sys.base_prefix else REPO_ROOT / ".venv"
            (repo / ".venv").symlink_to(venv.resolve(), target_is_directory=True)
            for block in BLOCKS:  # the files the page asks to save exist before its commands run (shown after them)
                if block.page == page and "file" in block.markers and "skip" not in block.markers:
                    (repo / block.markers["file"]).write_text(block.text + "\n", encoding="utf-8")
            self.dirs[page] = repo
        return self.dirs[page]


def _copy_entry(src: Path, dst: Path) -> None:
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, dst, symlinks=True)
    else:
        shutil.copy2(src, dst, follow_symlinks=False)


def _quick_lines(block: Block) -> list[str]:
    """The logical lines of a block's quick variant (``\\`` continuations joined), blank lines left out."""
    text = re.sub(r"\\\n\s*", " ", block.markers.get("quick", ""))
    return [line.strip() for line in text.splitlines() if line.strip()]


def _shared_lines(blocks: list[Block]) -> frozenset[str]:
    """The quick lines worth computing once: a reproduction (its only inputs are ../shared/data and the code, so the
    same line gives the same files on every page) that the quick variants of two or more pages run."""
    pages: dict[str, set[Path]] = {}
    for block in blocks:
        if block.kind == "shell" and "skip" not in block.markers:
            for line in _quick_lines(block):
                pages.setdefault(line, set()).add(block.page)
    return frozenset(
        line for line, where in pages.items() if len(where) > 1 and line.startswith(".venv/bin/wattsched reproduce ")
    )


class SharedRuns:
    """Lines that several pages' quick variants run identically, computed once per session: the files the first
    run wrote at the top of its page directory are kept under ``root`` and copied into the next page's directory.
    A lock per line makes a page wait while another (on another xdist worker) is computing it; a failed line keeps
    nothing, so every page that runs it reports its own failure."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def run(self, line: str, cwd: Path, compute: Callable[[], None]) -> bool:
        """Run ``line`` through ``compute`` in ``cwd``, or copy its files from an earlier run; whether it was copied."""
        key = self.root / hashlib.sha256(line.encode()).hexdigest()[:16]
        with open(f"{key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (key / "ok").exists():
                for entry in (key / "files").iterdir():
                    _copy_entry(entry, cwd / entry.name)
                return True
            before = {entry.name for entry in cwd.iterdir()}
            compute()
            shutil.rmtree(key, ignore_errors=True)
            (key / "files").mkdir(parents=True)
            for entry in cwd.iterdir():
                if entry.name not in before:
                    _copy_entry(entry, key / "files" / entry.name)
            (key / "line").write_text(line + "\n", encoding="utf-8")
            (key / "ok").touch()
            return False


#: The quick lines this session computes once (:func:`_shared_lines`).
SHARED_LINES = _shared_lines(BLOCKS)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Pages:
    return Pages(tmp_path_factory.mktemp("docs-commands"))


@pytest.fixture(scope="session")
def shared_runs(tmp_path_factory: pytest.TempPathFactory) -> SharedRuns:
    base = tmp_path_factory.getbasetemp()  # an xdist worker's is a folder of the session's, shared by the workers
    return SharedRuns((base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "docs-shared-runs")


def _env() -> dict[str, str]:
    src = str(REPO_ROOT / "src")
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    extra = os.environ.get("PYTHONPATH")
    return os.environ | {
        "PYTHONPATH": src + (os.pathsep + extra if extra else ""),
        "PATH": path,
        "COLUMNS": "200",
        "NO_COLOR": "1",
        "MPLBACKEND": "Agg",
        "PYTHONUNBUFFERED": "1",
    }


def _run(
    args: list[str], cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        env=_env() | (env or {}),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def _normalise(text: str) -> str:
    return re.sub(r"\d+(?:[.,]\d+)*", "#", " ".join(text.split()))


def _console(block: Block, cwd: Path, env: dict[str, str] | None = None) -> None:
    """Run the ``$ `` lines; the lines below each are its expected output, matched loosely."""
    steps: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    for command, expected in steps:
        done = _run(["bash", "-e", "-o", "pipefail", "-c", command], cwd, env=env)
        assert done.returncode == 0, f"{block.id}: `{command}` exited {done.returncode}\n{done.stdout}{done.stderr}"
        seen = _normalise(done.stdout + done.stderr)
        for want in expected:
            if want.strip() and want.strip() != "...":
                assert _normalise(want) in seen, f"{block.id}: `{command}` did not print {want!r}:\n{done.stdout}"


def _python_source(block: Block) -> str:
    if "continue" not in block.markers:
        return block.text
    before = [b for b in BLOCKS if b.page == block.page and b.kind == "python" and b.line < block.line]
    return "\n".join(b.text for b in before) + "\n" + block.text


def _replaced(block: Block, text: str) -> str:
    """``text`` with the block's ``replace`` pairs applied; each pair must match (else the marker is stale)."""
    pairs = shlex.split(block.markers.get("replace", ""))
    assert len(pairs) % 2 == 0, f"{block.id}: `replace` takes pairs of strings"
    for old, new in zip(pairs[::2], pairs[1::2], strict=True):
        assert old in text, f"{block.id}: `replace` names {old!r}, which the block no longer holds"
        text = text.replace(old, new)
    return text


def run_block(block: Block, cwd: Path, shared: SharedRuns | None = None) -> None:
    """Do what the block's kind and markers ask; raise AssertionError with the block's id on failure."""
    if "skip" in block.markers:
        return
    if block.kind == "data":
        loader = {"toml": tomllib.loads, "json": json.loads}.get(block.lang, yaml.safe_load)
        loader(block.text)
    if "file" in block.markers:
        (cwd / block.markers["file"]).write_text(block.text + "\n", encoding="utf-8")
        return
    if "spec" in block.markers:
        (cwd / block.markers["spec"]).write_text(block.text + "\n", encoding="utf-8")
        check = "import sys; from wattsched.campaign.kinds import load_experiment; load_experiment(sys.argv[1])"
        done = _run([sys.executable, "-c", check, block.markers["spec"]], cwd)
        assert done.returncode == 0, f"{block.id}: the campaign spec does not validate:\n{done.stdout}{done.stderr}"
        return
    script = block.markers.get("quick") or _replaced(block, block.text)
    env = dict(pair.split("=", 1) for pair in shlex.split(block.markers.get("env", "")))
    lines = _quick_lines(block) if block.kind == "shell" and "quick" in block.markers else []
    if shared is not None and any(line in SHARED_LINES for line in lines):
        for line in lines:  # a command list: each line alone, the shared ones once per session

            def compute(line: str = line) -> None:
                done = _run(["bash", "-e", "-o", "pipefail", "-c", line], cwd, env=env)
                assert done.returncode == 0, f"{block.id} exited {done.returncode}:\n{line}\n{done.stdout}{done.stderr}"

            if line in SHARED_LINES:
                shared.run(line, cwd, compute)
            else:
                compute()
    elif block.kind == "shell" and block.prompts and "quick" not in block.markers:
        _console(block, cwd, env)
    elif block.kind == "shell":
        done = _run(["bash", "-e", "-o", "pipefail", "-c", script], cwd, env=env)
        assert done.returncode == 0, f"{block.id} exited {done.returncode}:\n{script}\n{done.stdout}{done.stderr}"
    elif block.kind == "python":
        source = block.markers.get("quick") or _replaced(block, _python_source(block))
        done = _run([sys.executable, "-"], cwd, stdin=source, env=env)
        assert done.returncode == 0, f"{block.id}: the python block failed:\n{done.stdout}{done.stderr}"


def _children_cpu() -> float:
    """CPU seconds of the finished child processes: the blocks' cost, whatever else loads the machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _runs_in_order(block: Block) -> bool:
    """Whether a later block's set-up runs this one: slow blocks run only when selected themselves, so nothing in
    the fast set may depend on them."""
    return "slow" not in block.markers


def catch_up(block: Block, pages: Pages, shared: SharedRuns | None = None) -> Path:
    """Run the blocks of ``block``'s page above it that have not run yet (the slow ones only when selected
    themselves; a failure is reported by that block's own test) and return the page's folder."""
    cwd = pages.workdir(block.page)
    same_page = [b for b in BLOCKS if b.page == block.page]
    index = same_page.index(block)
    for earlier in same_page[pages.done.get(block.page, 0) : index]:
        if _runs_in_order(earlier):
            with contextlib.suppress(AssertionError):
                run_block(earlier, cwd, shared)
    pages.done[block.page] = index + 1
    return cwd


@pytest.mark.data
@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_documented_block_runs_as_printed(block: Block, pages: Pages, shared_runs: SharedRuns) -> None:
    if "skip" in block.markers:
        pytest.skip(f"{block.id}: {block.markers['skip'] or 'no reason given'}")
    require_data("")  # the printed commands read ../shared/data: fail under CI=true when it is missing
    cwd = catch_up(block, pages, shared_runs)
    started, cpu = time.monotonic(), _children_cpu()
    run_block(block, cwd, shared_runs)
    print(f"{block.id}: {time.monotonic() - started:.1f} s wall, {_children_cpu() - cpu:.1f} s CPU")
    left = _not_ignored(cwd)
    assert not left, (
        f"{block.id}: run in a checkout, the page's commands leave {left} untracked: add a pattern to .gitignore"
    )


def _not_ignored(workdir: Path) -> list[str]:
    """What a page's commands wrote at the top of its working directory (the checkout's own entries are links)
    that the repository's .gitignore does not cover: a reader running the docs in a clone would see it as an
    untracked file (issue 30, item 14)."""
    written = [e.name + ("/" if e.is_dir() else "") for e in workdir.iterdir() if not e.is_symlink()]
    if not written:
        return []
    done = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "check-ignore", "--no-index", "--stdin"],
        input="\n".join(written),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: none of them is ignored
    ignored = {line.strip() for line in done.stdout.splitlines()}
    return sorted(set(written) - ignored)


def test_gitignore_covers_what_the_docs_write_and_nothing_tracked(tmp_path: Path) -> None:
    """The check above sees an output the .gitignore misses, and the .gitignore hides no file the project tracks
    (pyproject.toml sits among the ignored *.toml of the root)."""
    (tmp_path / "out-new").mkdir()
    (tmp_path / "trace.parquet").write_text("")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "pyproject.toml").write_text("")
    assert _not_ignored(tmp_path) == ["notes.txt", "pyproject.toml"]
    tracked = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "ls-files", "-ci", "--exclude-standard"], capture_output=True, text=True
    )
    assert tracked.returncode == 0 and tracked.stdout == "", f"tracked files the .gitignore matches: {tracked.stdout}"


def test_markers_are_known_and_long_blocks_state_their_run_time() -> None:
    """A marker is one of the known keys; a block marked long (quick, replace or slow) states its run time nearby."""
    problems = []
    for block in BLOCKS:
        unknown = set(block.markers) - KNOWN_MARKERS
        if unknown:
            problems.append(f"{block.id}: unknown docs-test marker(s) {sorted(unknown)}")
        if "skip" in block.markers and not block.markers["skip"]:
            problems.append(f"{block.id}: a skip needs a reason")
        for key in ("file", "spec"):
            if key in block.markers and not block.markers[key]:
                problems.append(f"{block.id}: `{key}` needs a file name")
        if (LONG_MARKERS & set(block.markers)) and not DURATION.search(block.text + "\n" + block.context):
            problems.append(f"{block.id}: marked long but states no run time (in the block or just above it)")
    assert not problems, "\n".join(problems)


def test_extraction_finds_shell_data_and_python_blocks(tmp_path: Path) -> None:
    """The extractor sees every kind of block, markers included, and ignores plain text blocks."""
    page = tmp_path / "page.md"
    page.write_text(
        "# t\n\n<!-- docs-test: file a.toml -->\n```toml\nx = 1\n```\n\n```\nnot run\n```\n\n"
        "<!-- docs-test: quick\necho quick\n-->\n<!-- docs-test: slow -->\n```bash\necho long  # about 5 min\n```\n"
        "```console\n$ echo hi\nhi\n```\n```python\nprint(1)\n```\n",
        encoding="utf-8",
    )
    found = extract_blocks(page)
    assert [(b.line, b.kind) for b in found] == [(4, "data"), (16, "shell"), (19, "shell"), (23, "python")]
    assert found[0].markers == {"file": "a.toml"}
    assert found[1].markers == {"quick": "echo quick", "slow": ""}
    assert found[2].prompts
    quick = Block(page, 1, "bash", "run --jobs 20000", "", {"replace": '"--jobs 20000" "--jobs 20"'})
    assert _replaced(quick, quick.text) == "run --jobs 20"
    stale = Block(page, 1, "bash", "run --jobs 500", "", {"replace": '"--jobs 20000" "--jobs 20"'})
    with pytest.raises(AssertionError, match="no longer holds"):
        _replaced(stale, stale.text)


def test_console_blocks_run_their_prompts_and_match_the_output_loosely(tmp_path: Path) -> None:
    """Numbers and spacing may differ from the printed output; words may not; a failing command fails the block."""
    page = tmp_path / "page.md"
    matching = Block(page, 1, "console", "$ echo 'wrote  1,234 jobs in 0.5 s'\nwrote 99 jobs in 7 s\n...", "")
    run_block(matching, tmp_path)
    other = Block(page, 1, "console", "$ echo 'wrote 3 jobs'\nread 3 jobs", "")
    with pytest.raises(AssertionError, match="did not print"):
        run_block(other, tmp_path)
    failing = Block(page, 1, "console", "$ false", "")
    with pytest.raises(AssertionError, match="exited 1"):
        run_block(failing, tmp_path)


def test_a_shared_line_runs_once_and_the_next_page_gets_its_files(tmp_path: Path) -> None:
    shared = SharedRuns(tmp_path / "memo")
    first, second, third = (tmp_path / name for name in ("a", "b", "c"))
    for page in (first, second, third):
        page.mkdir()
        (page / "kept").write_text("from the page\n")
    calls: list[Path] = []

    def compute(cwd: Path) -> None:
        calls.append(cwd)
        (cwd / "out").mkdir()
        (cwd / "out" / "report.md").write_text(f"run in {cwd.name}\n")

    assert shared.run("cmd", first, lambda: compute(first)) is False
    assert shared.run("cmd", second, lambda: compute(second)) is True
    assert calls == [first] and (second / "out" / "report.md").read_text() == "run in a\n"
    assert (second / "kept").read_text() == "from the page\n"  # only what the line wrote is copied

    def failing() -> None:
        raise AssertionError("the line failed")

    with pytest.raises(AssertionError):
        shared.run("other", first, failing)
    with pytest.raises(AssertionError):  # a failure is not kept: the next page runs the line and fails too
        shared.run("other", third, failing)
    assert ".venv/bin/wattsched reproduce 000 --quick --seed-count 1" in SHARED_LINES
