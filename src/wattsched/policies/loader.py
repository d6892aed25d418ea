"""Python policies named on the command line: ``module:Class`` or ``path/to/file.py:Class``.

What is named is imported and, when it is a class (or any other callable that is not already a policy),
called without arguments; the result must satisfy :class:`wattsched.core.policy.Policy` (a ``name`` and a
``schedule(view)`` method) or :class:`~wattsched.core.policy.CompiledPolicy` (a ``name`` and a static
``schedule_into(view, out)``, compiled). Every failure is a :class:`PolicyLoadError` with a one-line reason: the
module or file missing, the attribute missing, the constructor needing arguments, or the object not being a policy.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from wattsched.core.policy import Policy, is_compiled_policy

__all__ = ["PolicyLoadError", "is_policy_reference", "load_policy"]


class PolicyLoadError(ValueError):
    """A ``module:Class`` policy reference that cannot be loaded, with the reason."""


def is_policy_reference(text: str) -> bool:
    """Whether ``text`` names a Python policy (``module:Class``, ``file.py:Class``) rather than a built-in one."""
    return ":" in text


def load_policy(reference: str) -> Policy:
    """The policy ``reference`` names (``module:Class``, ``package.module:factory`` or ``file.py:Class``)."""
    target, _, attr = reference.rpartition(":")
    if not target or not attr:
        raise PolicyLoadError(f"--policy {reference!r}: expected MODULE:CLASS or FILE.py:CLASS")
    module = _import(target, reference)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise PolicyLoadError(f"--policy {reference!r}: {target} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not _is_policy(obj) or isinstance(obj, type):
        if not callable(obj):
            raise PolicyLoadError(f"--policy {reference!r}: {attr} is a {type(obj).__name__}, not a policy")
        try:
            obj = obj()
        except TypeError as exc:
            raise PolicyLoadError(f"--policy {reference!r}: {attr}() cannot be made without arguments: {exc}") from exc
    if not _is_policy(obj):
        raise PolicyLoadError(
            f"--policy {reference!r}: {attr} is not a policy (it needs a `name` and a `schedule(view)` method, "
            "or a static `schedule_into(view, out)` to be compiled; see wattsched.core.policy)"
        )
    return obj


def _is_policy(obj: Any) -> bool:
    """A Python policy (``schedule(view)``) or a compiled one (``schedule_into(view, out)``), as an instance."""
    return not isinstance(obj, type) and (isinstance(obj, Policy) or (is_compiled_policy(obj) and hasattr(obj, "name")))


def resolve_policy(policy: Any) -> Any:
    """What the CLI's ``--policy`` and :func:`wattsched.api.run_policy` accept, resolved the same way: a built-in
    name in any case (``EASY`` → ``easy``), a ``module:Class`` or ``FILE.py:Class`` reference (loaded), or a
    policy object (unchanged). An unknown name passes unchanged, to be refused with the list of names where it is
    used."""
    if not isinstance(policy, str):
        return policy
    if is_policy_reference(policy):
        return load_policy(policy)
    from wattsched.policies.registry import POLICIES  # deferred: loads numba's compiled policies

    return policy.lower() if policy.lower() in POLICIES else policy


def _import(target: str, reference: str) -> Any:
    """The module named by a dotted name, or loaded from a ``.py`` file path."""
    if target.endswith(".py") or "/" in target or "\\" in target:
        path = Path(target)
        if not path.is_file():
            raise PolicyLoadError(f"--policy {reference!r}: no such file {path}")
        name = f"wattsched_user_policy_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise PolicyLoadError(f"--policy {reference!r}: {path} is not a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look the module up by name
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the user's module failed: say where, one line
            sys.modules.pop(name, None)
            why = f"{type(exc).__name__}: {exc}"
            raise PolicyLoadError(f"--policy {reference!r}: importing {path} failed: {why}") from exc
        return module
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        # as `python -m` does: a module of the current directory is found from the `wattsched` script too
        sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        raise PolicyLoadError(f"--policy {reference!r}: no module named {exc.name!r}") from exc
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
        raise PolicyLoadError(f"--policy {reference!r}: importing {target} failed: {why}") from exc
