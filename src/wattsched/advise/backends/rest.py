"""The slurmrestd backend (OpenAPI v0.0.38 of Slurm 22.05) with JWT authentication.

Why the standard library (``urllib``) and not httpx/requests: the advisor makes a handful of small JSON requests a
cycle to one local daemon; nothing here needs connection pools, HTTP/2 or async, and a new runtime dependency for
that is not worth it. What 22.05's REST API can and cannot do, as verified on the testbed:

- ``GET /slurm/v0.0.38/jobs`` (squeue's JSON shape), ``GET /slurmdb/v0.0.38/jobs?start_time=...`` (sacct's,
  ``start_time`` in Slurm's time syntax, not epoch), ``GET /slurm/v0.0.38/licenses``, ``GET /slurm/v0.0.38/ping``;
- ``POST /slurm/v0.0.38/job/{id}`` with a flat body ``{"licenses": "power:700"}`` or ``{"hold": true|false}``
  (a ``{"job": {...}}`` wrapper is refused);
- node power: ``/nodes`` has no energy field in 22.05, so CurrentWatts comes from ``scontrol show node -o`` when the
  Slurm tools are installed (else None); budgets (reservations, a remote license's count) have no 22.05 endpoint, so
  :meth:`SlurmREST.apply` of ``set_budget`` and :meth:`SlurmREST.schedule_budget` go through the command-line
  backend (documented in docs/advisor.md).

The token: the configuration's, else ``SLURM_JWT`` of the environment, else ``scontrol token`` (renewed once when
slurmrestd answers 401).
"""

from __future__ import annotations

import dataclasses
import getpass
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from wattsched.advise.backends import DEFAULT_LOOKBACK, DEFAULT_TIMEOUT, BackendError, check_version
from wattsched.advise.backends import parse as p
from wattsched.advise.backends.cli import SlurmCLI, slurm_time
from wattsched.advise.records import Action, Observation, SlurmAnswerError, SlurmUnavailable

API = "/slurm/v0.0.38"
DB_API = "/slurmdb/v0.0.38"
#: Lifespan asked of ``scontrol token`` (seconds): a day, renewed on a 401.
TOKEN_LIFESPAN = 86_400


class SlurmREST:
    """slurmrestd as a :class:`~wattsched.advise.backends.Backend`."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        license_name: str | None = None,
        slurm_conf: str | None = None,
        lookback: float = DEFAULT_LOOKBACK,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.cli = SlurmCLI(timeout, license_name, slurm_conf, lookback, env)  # token, node power, budgets
        self.timeout, self.lookback = timeout, lookback
        self._token = token or self.cli.env.get("SLURM_JWT") or None
        self._token_from_scontrol = False
        self.user = user or self.cli.env.get("SLURM_JWT_USER") or getpass.getuser()
        self.license_name: str = license_name or ""
        self._wanted_license = license_name
        self.version = ""
        self.latencies: dict[str, list[float]] = defaultdict(list)

    def _scontrol_token(self) -> str:
        out = self.cli.run(["scontrol", "token", f"lifespan={TOKEN_LIFESPAN}"])
        token = out.strip().partition("SLURM_JWT=")[2]
        if not token:
            raise BackendError("scontrol token gave no SLURM_JWT: is AuthAltTypes=auth/jwt set in slurm.conf?")
        self._token_from_scontrol = True
        return token

    def request(self, method: str, path: str, body: dict[str, Any] | None = None, retry: bool = True) -> dict[str, Any]:
        """The JSON answer of one request; no answer → SlurmUnavailable, refused or malformed → SlurmAnswerError."""
        if self._token is None:
            self._token = self._scontrol_token()
        source = f"{method} {path.split('?')[0]}"
        headers = {"X-SLURM-USER-NAME": self.user, "X-SLURM-USER-TOKEN": self._token, "Accept": "application/json"}
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        began = time.monotonic()
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 401 and retry and (self._token_from_scontrol or not self._token):
                self._token = self._scontrol_token()
                return self.request(method, path, body, retry=False)
            if exc.code in (401, 403):
                raise BackendError(
                    f"{source}: slurmrestd refused the token (HTTP {exc.code}) for {self.user}"
                ) from None
            text = exc.read()
            if exc.code >= 500 and not text:
                raise SlurmUnavailable(f"{source}: HTTP {exc.code}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if retry and isinstance(reason, ConnectionResetError):
                # slurmrestd 22.05 now and then resets a connection under load (seen once in 30 testbed runs);
                # every request the advisor makes is idempotent (reads, and updates that set a value), so once more
                time.sleep(0.2)
                return self.request(method, path, body, retry=False)
            raise SlurmUnavailable(f"{source}: no answer from {self.url} ({reason})") from None
        finally:
            self.latencies[source.rsplit("/", 1)[0] if "/job/" in source else source].append(time.monotonic() - began)
        return p.load_json(text, source)

    def probe(self) -> str:
        doc = self.request("GET", f"{API}/ping")
        version = p.answer_version(doc)
        if version is None:
            raise SlurmAnswerError(f"GET {API}/ping", None, "meta.Slurm.release", "missing")
        self.version = check_version(version)
        try:
            self.license_name = p.power_license(self.licenses(), f"GET {API}/licenses", self._wanted_license).name
        except LookupError as exc:
            raise BackendError(str(exc)) from None
        self.cli.license_name = self.license_name
        return self.version

    def licenses(self) -> dict[str, Any]:
        return p.licenses_from_rest(self.request("GET", f"{API}/licenses"), f"GET {API}/licenses")

    def observe(self, since: float | None) -> Observation:
        if not self.license_name:
            self.probe()
        now = time.time()
        queue_doc = self.request("GET", f"{API}/jobs")
        queue = p.queued_jobs(queue_doc, f"GET {API}/jobs", self.license_name)
        self.cli._job_licenses = {
            j["job_id"]: j.get("licenses") or "" for j in queue_doc["jobs"] if isinstance(j, dict) and "job_id" in j
        }
        start = now - self.lookback if since is None else since
        query = urllib.parse.quote(slurm_time(start - 1))
        db = self.request("GET", f"{DB_API}/jobs?start_time={query}")
        finished = p.finished_jobs(db, f"GET {DB_API}/jobs", start, self.license_name)
        try:  # 22.05's /nodes has no power: the Slurm tools give CurrentWatts when they are installed
            nodes = p.nodes_from_scontrol(self.cli.run(["scontrol", "show", "node", "-o"]), "scontrol show node")
        except BackendError:
            nodes = p.nodes_from_rest(self.request("GET", f"{API}/nodes"), f"GET {API}/nodes")
        lic = self.licenses().get(self.license_name)
        if lic is None:
            raise SlurmAnswerError(f"GET {API}/licenses", None, None, f"license {self.license_name!r} is gone")
        if not lic.remote:  # 22.05's REST has no reservations endpoint for licenses: the Slurm tools
            lic = dataclasses.replace(lic, reserved_by_cap=self.cli.reserved_by_cap())
        return Observation(now, queue, finished, nodes, lic, self.version)

    def apply(self, action: Action) -> None:
        if action.kind in ("set_budget", "suspend", "resume", "requeue", "set_comment", "set_nodes"):
            # 22.05's REST API has no budget, suspend, requeue or AdminComment endpoint: the command-line tools
            self.cli.apply(action)
            return
        if action.job_id is None:
            raise SlurmAnswerError(action.kind, None, "job_id", "no job given")
        path = f"{API}/job/{action.job_id}"
        if action.kind in ("hold", "release"):
            self.request("POST", path, {"hold": action.kind == "hold"})
        elif action.kind == "set_license":
            if action.value is None or action.value < 0:
                raise SlurmAnswerError("set_license", f"job {action.job_id}", "value", f"{action.value!r} is not W")
            self.request("POST", path, {"licenses": self.cli.merged_licenses(action.job_id, int(action.value))})
        else:
            raise SlurmAnswerError("apply", f"job {action.job_id}", "kind", f"unknown action {action.kind!r}")

    def schedule_budget(self, changes: list[tuple[float, int]]) -> None:
        self.cli.schedule_budget(changes)
