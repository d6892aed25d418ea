"""Every file the advisor writes, as root, in a folder anyone may write to (mode 1777, as /tmp), with an adversary's
symlinks and hard links planted at every name it could guess: the status file, the shadow report and the replay's
files and figures, the actions log, the state (SQLite and its -journal, -wal, -shm) and the lock. The victim, a
file outside the folder, must never change; a symlink at a name the advisor replaces whole is replaced, one at a
name it opens in place (the state, the actions log, the lock) is refused with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_advise_loop import _cluster_with_history, _config
from test_advise_replay import write_dump
from test_advise_shadow_report import _run_cycles
from test_advise_standby import _fake_slurm
from wattsched.advise.config import load_config
from wattsched.advise.loop import Advisor, write_standby_status
from wattsched.advise.replay import replay
from wattsched.advise.shadow_report import shadow_report, write_shadow_report
from wattsched.advise.store import AdvisorStore, StoreError
from wattsched.core.output_folders import clean_temporaries_of, is_temporary
from wattsched.core.safe_files import UnsafeFileError, append_line
from wattsched.core.store import atomic_path, atomic_write
from wattsched.report.advisor import write_replay_figure, write_shadow_figure

NOBODY = 65534


class Victim:
    """A file the adversary points its links at: its content and identity, checked unchanged."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_text("precious: the advisor must never write here\n")
        self.before = self._seen()

    def _seen(self) -> tuple[bytes, int, int, int]:
        st = self.path.stat()
        return self.path.read_bytes(), st.st_ino, st.st_mtime_ns, st.st_mode

    def assert_unchanged(self) -> None:
        assert self._seen() == self.before, f"the victim {self.path} was written"


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A folder every user may write to, with the sticky bit (as /tmp)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    return folder


@pytest.fixture
def victim(tmp_path: Path) -> Victim:
    return Victim(tmp_path / "victim.txt")


def _plant(victim: Victim, *names: Path) -> None:
    for name in names:
        name.symlink_to(victim.path)


def _replaced(path: Path) -> None:
    """``path`` was a planted symlink and is now the advisor's own regular file."""
    assert not path.is_symlink() and path.is_file() and path.stat().st_nlink == 1, path


def _one_line(message: str) -> None:
    assert message and "\n" not in message.strip() and "Traceback" not in message, message


# ------------------------------------------------------------------------------------- files replaced whole
def test_the_status_file_replaces_a_planted_symlink_and_never_follows_one(shared: Path, victim: Victim) -> None:
    status = shared / "status.json"
    old_temporary = shared / f".status.json.{os.getpid()}.tmp"  # the name the advisor used to write through
    _plant(victim, status, old_temporary)
    cfg = _config(shared, status_file=status, state=shared / "advisor.sqlite")
    with AdvisorStore(cfg.state) as store:
        Advisor(cfg, _cluster_with_history(), store).cycle()
    victim.assert_unchanged()
    _replaced(status)
    assert json.loads(status.read_text())["role"] == "active"
    assert old_temporary.is_symlink() and old_temporary.resolve() == victim.path  # never touched
    assert oct(status.stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    # a standby's status too; and no temporary is left behind
    status.unlink()
    _plant(victim, status)
    write_standby_status(status, state=cfg.state, holder=123, mode="licenses")
    victim.assert_unchanged()
    _replaced(status)
    assert [p.name for p in shared.iterdir() if is_temporary(p) and p != old_temporary] == []


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_the_shadow_report_and_its_figure_replace_planted_symlinks(shared: Path, victim: Victim) -> None:
    with AdvisorStore(shared / "s.sqlite") as store:
        _run_cycles(store)
    report = shadow_report(shared / "s.sqlite")
    out = shared / "report"
    out.mkdir(mode=0o1777)
    out.chmod(0o1777)
    names = ["power.csv", "jobs.csv", "actions.csv", "summary.json", "advisor-power.png", "advisor-power.svg"]
    _plant(victim, *(out / n for n in names))
    written = [*write_shadow_report(report, out).values(), *write_shadow_figure(report, out)]
    victim.assert_unchanged()
    assert sorted(p.name for p in written) == sorted(names)
    for path in written:
        _replaced(path)
    assert json.loads((out / "summary.json").read_text())["cycles"] == 3
    assert (out / "advisor-power.png").read_bytes().startswith(b"\x89PNG")
    assert sorted(p.name for p in out.iterdir()) == sorted(names)  # no temporary left


def test_the_replay_files_and_figure_replace_planted_symlinks(shared: Path, victim: Victim, tmp_path: Path) -> None:
    cfg = load_config(None, cap=1400, power__idle_watts_per_node=50, power__max_watts_per_node=400)
    result = replay(write_dump(tmp_path / "d.sacct", n=20), cfg)
    names = ["capped.csv", "uncapped.csv", "power.csv", "rejects.csv", "summary.json"]
    names += ["replay-power.png", "replay-power.svg"]
    _plant(victim, *(shared / n for n in names))
    written = [*result.write(shared).values(), *write_replay_figure(result, shared)]
    victim.assert_unchanged()
    assert sorted(p.name for p in written) == sorted(names)
    for path in written:
        _replaced(path)
    assert json.loads((shared / "summary.json").read_text())["jobs"] == 20


def test_atomic_writes_use_names_nobody_can_plant(shared: Path, victim: Victim) -> None:
    """The shared helpers (core.store): a new temporary with a random part in its name, created exclusively, that
    the campaign runner still recognises as a killed writer's leftover."""
    target = shared / "result.json"
    _plant(victim, target, shared / f".result.json.{os.getpid()}.tmp")
    seen: list[Path] = []
    with atomic_path(target) as tmp:
        seen.append(tmp)
        assert tmp.name.startswith(".result.json.") and tmp.name.endswith(f".{os.getpid()}.tmp")
        assert is_temporary(tmp) and len(tmp.name) > len(f".result.json.{os.getpid()}.tmp")
        tmp.write_text("{}")
    atomic_write(target, '{"a": 1}')
    victim.assert_unchanged()
    _replaced(target)
    assert json.loads(target.read_text()) == {"a": 1}
    # a killed writer's temporary (new and old forms) is cleaned by the lock holder; the planted one too
    leftover = Path(str(seen[0]))
    leftover.write_text("half")
    assert clean_temporaries_of([target]) == 2
    assert not leftover.exists() and target.exists()
    victim.assert_unchanged()


# ------------------------------------------------------------------------------------- files opened in place
def test_the_actions_log_refuses_a_symlink_a_hard_link_and_another_users_file(shared: Path, victim: Victim) -> None:
    log = shared / "actions.jsonl"
    _plant(victim, log)
    notes: list[str] = []
    cfg = _config(shared, mode="shadow", state=shared / "advisor.sqlite")
    with AdvisorStore(cfg.state) as store:
        result = Advisor(cfg, _cluster_with_history(), store, actions_log=log, on_note=notes.append).cycle()
        assert result.actions and store.frame("audit").height == len(result.actions)  # audited all the same
    victim.assert_unchanged()
    assert log.is_symlink()
    refusals = [n for n in notes if n.startswith("action not logged: ")]
    assert len(refusals) == len(result.actions)
    assert f"{log}: the actions log is a symbolic link: refused" in refusals[0]
    _one_line(refusals[0])
    log.unlink()
    os.link(victim.path, log)  # a hard link: the same file under the log's name
    with pytest.raises(UnsafeFileError, match="has 2 hard links: refused"):
        append_line(log, "{}", "actions log")
    victim.assert_unchanged()
    log.unlink()
    if os.geteuid() == 0:
        log.write_text("")
        os.chown(log, NOBODY, NOBODY)
        with pytest.raises(UnsafeFileError, match=r"belongs to .*uid 65534.*refused"):
            append_line(log, "{}", "actions log")
        assert log.read_text() == ""
        log.unlink()
    append_line(log, '{"ok": 1}', "actions log")  # nothing planted: created, ours, 0644 less the umask
    assert log.read_text() == '{"ok": 1}\n' and log.stat().st_uid == os.geteuid()


@pytest.mark.parametrize(
    "name", ["advisor.sqlite", "advisor.sqlite-wal", "advisor.sqlite-shm", "advisor.sqlite-journal"]
)
def test_the_state_refuses_a_planted_symlink_at_each_of_its_files(shared: Path, victim: Victim, name: str) -> None:
    _plant(victim, shared / name)
    with pytest.raises(StoreError) as refused:
        AdvisorStore(shared / "advisor.sqlite")
    _one_line(str(refused.value))
    assert str(refused.value).startswith(f"{shared / name}: the advisor state") and "symbolic link" in str(
        refused.value
    )
    victim.assert_unchanged()


def test_the_state_refuses_a_hard_link_another_users_file_and_a_folder_without_sticky_bit(
    shared: Path, victim: Victim, tmp_path: Path
) -> None:
    state = shared / "advisor.sqlite"
    os.link(victim.path, state.with_name("advisor.sqlite-wal"))
    with pytest.raises(StoreError, match=r"-wal: the advisor state's wal file has 2 hard links: refused"):
        AdvisorStore(state)
    victim.assert_unchanged()
    state.with_name("advisor.sqlite-wal").unlink()
    if os.geteuid() == 0:
        state.write_bytes(b"")
        os.chown(state, NOBODY, NOBODY)
        with pytest.raises(StoreError, match=r"advisor state belongs to .*uid 65534.*refused"):
            AdvisorStore(state)
        state.unlink()
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    with pytest.raises(StoreError, match=r"every user may write to this folder and it has no sticky bit"):
        AdvisorStore(open_folder / "advisor.sqlite")
    assert list(open_folder.iterdir()) == []
    # nothing planted: the state and its companions are created private to the advisor
    with AdvisorStore(state) as store:
        store.set_idle_watts(100.0)
        modes = {p.name: p.stat().st_mode & 0o777 for p in shared.iterdir()}
    assert modes == {"advisor.sqlite": 0o600, "advisor.sqlite-wal": 0o600, "advisor.sqlite-shm": 0o600}


def test_the_command_refuses_a_planted_actions_log_in_one_line_and_writes_nothing(
    shared: Path, victim: Victim, tmp_path: Path
) -> None:
    """The real command, as root: refused before any cycle; then, with the symlink gone, one shadow cycle whose
    status file replaces its planted symlink and whose actions log is its own file."""
    env = _fake_slurm(tmp_path / "bin", tmp_path / "calls.log")
    state, log, status = shared / "advisor.sqlite", shared / "advisor-actions.jsonl", shared / "status.json"
    _plant(victim, log, status)
    argv = [sys.executable, "-m", "wattsched", "advise", "--mode", "shadow", "--cap", "1500W", "--once",
            "--state", str(state), "--status-file", str(status)]  # fmt: skip
    refused = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2, refused.stderr
    assert (
        refused.stderr
        == f"error: {log}: the actions log is a symbolic link: refused (it would write wherever it points)\n"
    )
    assert not (tmp_path / "calls.log").exists() and not state.exists()
    victim.assert_unchanged()
    log.unlink()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    victim.assert_unchanged()
    _replaced(status)
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert rows and all(r["mode"] == "shadow" and not r["applied"] for r in rows)
