"""The root command group: the one place where an exception of any command becomes a one-line error, and where
help texts get plain metavars.

Every command runs inside :meth:`WattschedGroup.invoke`; without ``--debug`` (or ``WATTSCHED_DEBUG=1``) an
uncaught exception is printed as ``error: MESSAGE`` and the exit code is non-zero, so no command needs its own
catch-all. Ctrl-C that reaches it exits with 130 and one line.
"""

from __future__ import annotations

import re
import sys
import warnings
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from typer.core import TyperGroup

from wattsched.cli.common import error_line, output, reset_output_mode, warn
from wattsched.core.errors import InputWarning
from wattsched.core.stopping import interruptions

if TYPE_CHECKING:  # the installed typer; the fallback below is for older ones
    from typer import TyperException as _UsageBase
else:
    try:  # typer >= 0.2x has its own copy of click: its usage errors derive from TyperException
        from typer import TyperException as _UsageBase
    except ImportError:  # pragma: no cover - older typer on click
        from click import ClickException as _UsageBase

__all__ = [
    "EXPECTED_ERRORS",
    "ROOT_FLAGS",
    "WattschedGroup",
    "describe_exception",
    "hoist_root_flags",
    "input_warnings_as_lines",
    "plain_help",
    "plain_metavars",
]

#: Exceptions whose message is meant for the user (bad input, a missing file): printed without the hint to rerun
#: with --debug. The toolkit's own errors (WorkloadError, CampaignError, PlatformFileError...) derive from
#: ValueError, or are defined in wattsched (SimulationError, FetchError): see :func:`describe_exception`.
EXPECTED_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError)


def _is_panic(exc: BaseException) -> bool:
    """A Rust panic surfaced by polars or pyarrow (pyo3's ``PanicException`` derives from BaseException, so a
    plain ``except Exception`` misses it)."""
    return type(exc).__name__ == "PanicException"


def describe_exception(exc: BaseException) -> str:
    """The one-line message of an uncaught exception: its text (its class name when it has none); for an
    unexpected one (a bug, not bad input) the class name and the hint to rerun with --debug."""
    if isinstance(exc, MemoryError) or (_is_panic(exc) and "memory" in str(exc).lower()):
        return (
            "out of memory: the input or the run is larger than this machine can hold (a compressed input is"
            " bounded by WATTSCHED_MAX_INPUT_GB: docs/formats.md); run with --debug for the traceback"
        )
    text = str(exc).strip() or type(exc).__name__
    expected = isinstance(exc, EXPECTED_ERRORS) or type(exc).__module__.startswith("wattsched.")
    if expected:
        return text
    return f"{type(exc).__name__}: {text} (run with --debug for the traceback)"


#: The root's flags (``wattsched --json simulate …``), also taken after the command (``wattsched simulate …
#: --json``): a user puts an output switch at the end of the line, as with Slurm's ``--parsable`` or ``-Q``.
ROOT_FLAGS = ("--json", "--quiet", "-q", "--debug")
ROOT_FLAGS_EPILOG = "Global options, before or after the command: --json, --quiet (-q), --debug (see wattsched --help)."


def hoist_root_flags(args: list[str]) -> list[str]:
    """The arguments with the root's flags given after the command moved to the front, where click parses
    them; nothing after a ``--`` is moved (it is an argument, whatever it reads)."""
    end = args.index("--") if "--" in args else len(args)
    flags = [a for a in args[:end] if a in ROOT_FLAGS]
    if not flags:
        return args
    return flags + [a for a in args[:end] if a not in ROOT_FLAGS] + args[end:]


class WattschedGroup(TyperGroup):
    """typer's group with the error path of the whole command line (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        plain_metavars(self)
        _root_flags_epilog(self)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if ctx.parent is None:  # the root group: its flags may come after the command
            args = hoist_root_flags(args)
        return super().parse_args(ctx, args)

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except _UsageBase as exc:  # a bad root option (wattsched --bogus)
            _usage_error(exc)

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for param in params:  # typer adds --install-completion and --show-completion after __init__
            _plain_param(param)
        return params

    def invoke(self, ctx: Any) -> Any:
        with warnings.catch_warnings():  # the command's input warnings as one line each (input_warnings_as_lines)
            input_warnings_as_lines()
            return self._invoke(ctx)

    def _invoke(self, ctx: Any) -> Any:
        try:
            result = super().invoke(ctx)
            if output.json and not output.json_emitted:
                warn("--json: this command has no JSON summary; its text output went to stderr")
            return result
        except (typer.Exit, typer.Abort, BrokenPipeError):
            raise  # typer.Exit (fail() among them); a closed pipe (`| head`): typer exits quietly
        except _UsageBase as exc:
            _usage_error(exc)
        except interruptions():  # also an error raised by the stop itself (core.stopping.interruptions)
            if output.debug:
                raise
            from wattsched.cli.stoppable import exit_interrupted, interrupted_line

            stop = sys.exc_info()[1]
            said = isinstance(stop, KeyboardInterrupt) and str(stop)
            exit_interrupted(str(stop) if said else interrupted_line())
        except BaseException as exc:
            if output.debug or not (isinstance(exc, Exception) or _is_panic(exc)):
                raise  # SystemExit and the like go on; a Rust panic is an error like any other
            error_line(describe_exception(exc))
            raise typer.Exit(code=1) from None
        finally:
            reset_output_mode()


def input_warnings_as_lines() -> None:
    """Show every :class:`~wattsched.core.errors.InputWarning` as one ``warning: MESSAGE`` line (silenced by
    --quiet), once per message in a command (a campaign's runs would repeat it); other warnings as Python shows
    them. Readers and the power setup raise it
    where they assume something (a time zone, a cap the machine cannot reach): one place prints it for every
    command, instead of each command looking for it. Call inside ``warnings.catch_warnings()``, which restores the
    previous hooks."""
    shown = warnings.showwarning

    def show(
        message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        if issubclass(category, InputWarning):
            warn(str(message))
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.simplefilter("default", InputWarning)
    warnings.showwarning = show


def _usage_error(exc: Any) -> NoReturn:
    """A usage error (unknown option, a value not among the choices...) on one plain line naming the help to read,
    instead of typer's boxed, wrapped panel; the help itself when a group was given without a command."""
    if type(exc).__name__ == "NoArgsIsHelpError" or not hasattr(exc, "format_message"):
        raise exc
    ctx = getattr(exc, "ctx", None)
    hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
    error_line(exc.format_message() + hint)
    raise typer.Exit(code=getattr(exc, "exit_code", 2)) from None


def plain_metavars(command: Any) -> None:
    """Plain type names in the help of every option and argument under ``command``.

    typer >= 0.2x (its own copy of click) shows ``<bool>``, ``<str>``, ``<int>`` after each option and writes a
    required argument ``{name}`` in the usage line; we show nothing for a flag, the choices of an enum as a|b, else
    click's TEXT, INTEGER, FLOAT, PATH, and an argument as NAME ([NAME] when optional). typer has no setting for
    this, so each parameter's display methods are wrapped (guarded by tests/test_cli_help.py, which renders every
    command's help)."""
    for param in command.params:
        _plain_param(param)
        if getattr(param, "help", None):
            param.help = plain_help(param.help)
    for attr in ("help", "short_help"):
        if getattr(command, attr, None):
            setattr(command, attr, plain_help(getattr(command, attr)))
    _plain_help_option(command)
    for sub in getattr(command, "commands", {}).values():
        plain_metavars(sub)


def _root_flags_epilog(group: Any) -> None:
    """Every command's help ends naming the root's flags, which it accepts after it (:func:`hoist_root_flags`)."""
    for sub in getattr(group, "commands", {}).values():
        if getattr(sub, "commands", None):
            _root_flags_epilog(sub)
        elif not getattr(sub, "epilog", None):
            sub.epilog = ROOT_FLAGS_EPILOG


_RST_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_RST_LITERAL = re.compile(r"``([^`]+)``")


def plain_help(text: str) -> str:
    """A docstring as help text: reStructuredText roles and literals (``x``, :class:`x`) as plain x, and the lines
    of each paragraph joined (typer keeps a docstring's line breaks in the list of commands)."""
    text = _RST_LITERAL.sub(r"\1", _RST_ROLE.sub(r"\1", text))
    paragraphs = [p for p in re.split(r"\n\s*\n", text.strip())]
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)


_TYPE_WORDS = {"bool": "", "str": "TEXT", "int": "INTEGER", "float": "FLOAT", "path": "PATH", "file": "PATH"}


def _plain_type(shown: str | None) -> str | None:
    """typer's ``<int>``, ``<a|b>``, ``<float range>`` as INTEGER, a|b, FLOAT."""
    if not shown or not (shown.startswith("<") and ">" in shown):
        return shown
    inner, _, rest = shown[1:].partition(">")
    word = inner.removesuffix(" range")
    return _TYPE_WORDS.get(word, word if "|" in word else word.upper()) + rest


def _plain_param(param: Any) -> None:
    if not hasattr(param, "display_type_rich") or getattr(param, "_wattsched_plain", False):
        return
    param._wattsched_plain = True
    shown_type = param.display_type_rich

    def display_type_rich(ctx: Any) -> str | None:
        if getattr(param, "is_flag", False):
            return ""
        shown = shown_type(ctx)
        if getattr(getattr(param, "type_descriptor", None), "is_choice", False) and shown:
            return shown.removeprefix("<").removesuffix(">")  # the choices as they are typed
        return _plain_type(shown)

    param.display_type_rich = display_type_rich
    if hasattr(param, "_usage_display_name"):  # an argument: NAME in the usage line, not {name}

        def usage_name() -> str:
            name = (param.metavar or param.name or "value").upper() + ("..." if param.nargs != 1 else "")
            return name if param.required else f"[{name}]"

        param._usage_display_name = usage_name


def _plain_help_option(command: Any) -> None:
    """``--help`` is made per context by click: its display is made plain as it is made."""
    if not hasattr(command, "get_help_option"):
        return
    make = command.get_help_option

    def get_help_option(ctx: Any) -> Any:
        option = make(ctx)
        if option is not None:
            _plain_param(option)
        return option

    command.get_help_option = get_help_option
