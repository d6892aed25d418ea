"""The Slurm command-line backend: ``squeue``/``sacct`` with ``--json``, ``scontrol show node|licenses -o`` (22.05
has no JSON for them), ``scontrol update|hold|release`` and reservations, ``sacctmgr`` for a remote license.

Every command runs with a timeout and the caller's environment (``SLURM_CONF`` as the Slurm tools find it). A
tool that is missing is a :class:`BackendError`; no answer (non-zero exit of a read, a timeout, "Unable to
contact slurm controller") is :class:`SlurmUnavailable`; Slurm refusing a change is :class:`SlurmAnswerError`.
Each call's latency is kept in :attr:`SlurmCLI.latencies` (the status file and the docs quote them).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence

from wattsched.advise.backends import (
    CAP_RESERVATION,
    DEFAULT_LOOKBACK,
    DEFAULT_TIMEOUT,
    BackendError,
    check_version,
    parse_version,
)
from wattsched.advise.backends import parse as p
from wattsched.advise.records import Action, LicenseState, Observation, SlurmAnswerError, SlurmUnavailable

#: stderr of a Slurm tool that means the daemons did not answer (as opposed to refusing a request).
_NO_ANSWER = re.compile(
    r"Unable to contact slurm controller|Connection refused|Socket timed out|Zero Bytes were transmitted|"
    r"slurm_persist_conn|Unable to establish|Communication connection failure|Munge|authentication",
    re.IGNORECASE,
)


def slurm_time(epoch: float) -> str:
    """Epoch seconds as the local ``YYYY-MM-DDTHH:MM:SS`` the Slurm tools read."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(epoch))


def budget_windows(
    changes: Sequence[tuple[float, int]], total: int, now: float
) -> dict[str, tuple[float, float | None, int]]:
    """``[(start, watts), ...]`` → the reservations that hold them: ``{name: (start, end or None, reserved)}``.
    Each change lasts until the next one (the last for ever); a window whose budget is at or above the license
    total needs no reservation; a window that has begun starts ``now`` (Slurm refuses a start in the past); one
    that has ended is dropped. The name carries the window's own start so a re-run finds the same name."""
    ordered = sorted((float(t), int(w)) for t, w in changes)
    out: dict[str, tuple[float, float | None, int]] = {}
    for k, (start, watts) in enumerate(ordered):
        end = ordered[k + 1][0] if k + 1 < len(ordered) else None
        if watts < 0:
            raise BackendError(f"budget change at {slurm_time(start)}: {watts} W is negative")
        if end is not None and end <= now:
            continue
        reserved = total - min(watts, total)
        if reserved <= 0:
            continue
        out[f"{CAP_RESERVATION}-{int(start)}"] = (max(start, now), end, reserved)
    return out


class SlurmCLI:
    """The Slurm tools as a :class:`~wattsched.advise.backends.Backend`."""

    def __init__(
        self,
        timeout: float = DEFAULT_TIMEOUT,
        license_name: str | None = None,
        slurm_conf: str | None = None,
        lookback: float = DEFAULT_LOOKBACK,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.timeout, self.lookback = timeout, lookback
        self.env = dict(os.environ if env is None else env)
        if slurm_conf:
            self.env["SLURM_CONF"] = str(slurm_conf)
        self.license_name: str = license_name or ""
        self._wanted_license = license_name
        self.version = ""
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self._job_licenses: dict[int, str] = {}  # the full Licenses= text last seen per job (kept on updates)

    # -- running commands -------------------------------------------------------------------------------------
    def run(self, args: Sequence[str], change: bool = False) -> str:
        """stdout of a Slurm command. ``change``: a refusal (non-zero exit that is not a lost connection) is a
        SlurmAnswerError rather than SlurmUnavailable."""
        shown = " ".join(args[:3])
        began = time.monotonic()
        try:
            done = subprocess.run(
                list(args), capture_output=True, text=True, timeout=self.timeout, env=self.env, check=False
            )
        except FileNotFoundError:
            raise BackendError(
                f"{args[0]}: not found on PATH: install the Slurm client tools (Debian: slurm-client)"
            ) from None
        except subprocess.TimeoutExpired:
            raise SlurmUnavailable(f"{shown}: no answer within {self.timeout:g} s") from None
        finally:
            self.latencies[" ".join(args[:2])].append(time.monotonic() - began)
        if done.returncode != 0:
            err = " ".join((done.stderr or done.stdout).split())[:200] or f"exit code {done.returncode}"
            if change and not _NO_ANSWER.search(err):
                raise SlurmAnswerError(shown, None, None, f"refused: {err}")
            raise SlurmUnavailable(f"{shown}: {err}")
        return done.stdout

    # -- probe and observe ------------------------------------------------------------------------------------
    def probe(self) -> str:
        self.version = check_version(parse_version(self.run(["scontrol", "--version"])))
        self.run(["scontrol", "ping"])
        try:
            self.license_name = p.power_license(self.licenses(), "scontrol show licenses", self._wanted_license).name
        except LookupError as exc:
            raise BackendError(str(exc)) from None
        return self.version

    def licenses(self) -> dict[str, LicenseState]:
        return p.licenses_from_scontrol(self.run(["scontrol", "show", "licenses", "-o"]), "scontrol show licenses")

    def observe(self, since: float | None) -> Observation:
        if not self.license_name:
            self.probe()
        now = time.time()
        queue_doc = p.load_json(self.run(["squeue", "--json"]), "squeue --json")
        queue = p.queued_jobs(queue_doc, "squeue --json", self.license_name)
        self._job_licenses = {
            j["job_id"]: j.get("licenses") or "" for j in queue_doc["jobs"] if isinstance(j, dict) and "job_id" in j
        }
        start = now - self.lookback if since is None else since
        sacct_args = ["sacct", "--json", "-a", "-S", slurm_time(start - 1), "-E", "now"]
        finished = p.finished_jobs(
            p.load_json(self.run(sacct_args), "sacct --json"), "sacct --json", start, self.license_name
        )
        nodes = p.nodes_from_scontrol(self.run(["scontrol", "show", "node", "-o"]), "scontrol show node")
        lic = self.licenses().get(self.license_name)
        if lic is None:
            raise SlurmAnswerError("scontrol show licenses", None, None, f"license {self.license_name!r} is gone")
        if not lic.remote:
            lic = dataclasses.replace(lic, reserved_by_cap=self.reserved_by_cap())
        return Observation(now, queue, finished, nodes, lic, self.version)

    # -- apply ------------------------------------------------------------------------------------------------
    def apply(self, action: Action) -> None:
        if action.kind == "set_budget":
            if action.value is None:
                raise SlurmAnswerError("set_budget", None, "value", "no watts given")
            self.set_budget(int(action.value))
            return
        if action.job_id is None:
            raise SlurmAnswerError(action.kind, None, "job_id", "no job given")
        job = str(action.job_id)
        if action.kind in ("hold", "release", "suspend", "resume", "requeue"):
            # hold/release: the oversize hold and gate mode; suspend/resume/requeue: the overshoot response
            self.run(["scontrol", action.kind, job], change=True)
        elif action.kind == "set_nodes":  # a power domain's restriction (advise/domains.py)
            self.run(["scontrol", "update", f"JobId={job}", f"ExcNodeList={action.text or ''}"], change=True)
        elif action.kind == "set_comment":
            text = (action.text or "").replace("\n", " ")
            self.run(["scontrol", "update", f"JobId={job}", f"AdminComment={text}"], change=True)
        elif action.kind == "set_license":
            if action.value is None or action.value < 0:
                raise SlurmAnswerError("set_license", f"job {job}", "value", f"{action.value!r} is not a wattage")
            text = self.merged_licenses(action.job_id, int(action.value))
            self.run(["scontrol", "update", f"JobId={job}", f"Licenses={text}"], change=True)
        else:
            raise SlurmAnswerError("apply", f"job {job}", "kind", f"unknown action {action.kind!r}")

    def merged_licenses(self, job_id: int, watts: int) -> str:
        """The job's full license list with the power license set to ``watts`` (``Licenses=`` replaces the
        whole list, so the job's other licenses, as last observed, are kept)."""
        others = [
            item
            for item in self._job_licenses.get(job_id, "").split(",")
            if item and re.split(r"[:*]", item, maxsplit=1)[0] != self.license_name
        ]
        return ",".join([*others, f"{self.license_name}:{watts}"])

    def set_budget(self, watts: int) -> None:
        """A constant budget from now on. A remote license (``power@server``): its count in slurmdbd (Slurm
        picks it up in about 2 s). A local license: the reservation ``wattsched-cap`` keeps (total − budget)
        of it unusable, deleted when the budget reaches the total."""
        if watts < 0:
            raise SlurmAnswerError("set_budget", None, "value", f"{watts} W is negative")
        name, _, server = self.license_name.partition("@")
        if server:
            self.run(
                ["sacctmgr", "-i", "modify", "resource", f"name={name}", f"server={server}", "set", f"count={watts}"],
                change=True,
            )
            return
        lic = self.licenses()[self.license_name]
        reserved = lic.total - min(watts, lic.total)
        current = self.reservations()
        if reserved <= 0:
            if CAP_RESERVATION in current:
                self.run(["scontrol", "delete", f"ReservationName={CAP_RESERVATION}"], change=True)
            return
        self._put_reservation(CAP_RESERVATION, None, None, reserved, current.get(CAP_RESERVATION))

    def reserved_by_cap(self) -> int:
        """How much of the (local) power license the advisor's active cap reservations hold now."""
        total = 0
        for kv in self.reservations().values():
            if kv.get("State", "").upper() != "ACTIVE":
                continue
            for item in kv.get("Licenses", "").split(","):
                name, _, count = item.partition(":")
                if name == self.license_name and count.isdigit():
                    total += int(count)
        return total

    def reservations(self) -> dict[str, dict[str, str]]:
        """The advisor's reservations (``wattsched-cap`` and ``wattsched-cap-*``) by name, as ``scontrol show
        reservation -o`` key/values."""
        text = self.run(["scontrol", "show", "reservation", "-o"])
        out = {}
        for line in text.splitlines():
            kv = p.key_values(line)
            name = kv.get("ReservationName", "")
            if name == CAP_RESERVATION or name.startswith(CAP_RESERVATION + "-"):
                out[name] = kv
        return out

    def _put_reservation(
        self, name: str, start: float | None, end: float | None, reserved: int, existing: dict[str, str] | None
    ) -> None:
        lic = f"Licenses={self.license_name}:{reserved}"
        when = ["StartTime=now" if start is None else f"StartTime={slurm_time(start)}"]
        when.append("Duration=infinite" if end is None else f"EndTime={slurm_time(end)}")
        if existing is None:
            args = ["scontrol", "create", "reservation", f"ReservationName={name}", lic, "Flags=ANY_NODES"]
            self.run([*args, "Users=root", *when], change=True)
            return
        want_end = None if end is None else slurm_time(end)
        if existing.get("Licenses") != f"{self.license_name}:{reserved}" or (
            want_end is not None and existing.get("EndTime") != want_end
        ):
            args = ["scontrol", "update", f"ReservationName={name}", lic]
            self.run(args + ([] if end is None else [f"EndTime={want_end}"]), change=True)

    def schedule_budget(self, changes: list[tuple[float, int]]) -> None:
        """Reconcile ``wattsched-cap-<start>`` reservations with ``changes``: create the missing ones, update the
        changed ones, delete the stale ones (the constant ``wattsched-cap`` is left to :meth:`set_budget`)."""
        total = self.licenses()[self.license_name].total
        want = budget_windows(changes, total, time.time())
        have = {k: v for k, v in self.reservations().items() if k != CAP_RESERVATION}
        for name in sorted(set(have) - set(want)):
            self.run(["scontrol", "delete", f"ReservationName={name}"], change=True)
        for name, (start, end, reserved) in sorted(want.items()):
            self._put_reservation(name, start, end, reserved, have.get(name))
