"""The power model's defaults that the command line, the Python API and the campaign files share: one
definition each, importable without the power model itself (no pydantic or SciPy), so that ``wattsched --help``
stays fast."""

from __future__ import annotations

__all__ = ["DEFAULT_POST_WINDOW_CAP", "DEFAULT_PREDICTION_PLATFORM", "no_post_window_cap"]

#: [AMBIG-0.6] The cap after paper 000's power window: ``"none"``, no power check after it (the paper's "solely
#: during the first 3 hours"); ``"dynamic_range"`` is the artifact's value. docs/decisions.md has the evidence.
DEFAULT_POST_WINDOW_CAP = "none"

#: The platform of ``predict power``: its node maximum is the power predictor's last fallback, and its node count
#: sizes the EASY replay that gives completion times when the workload declares no size.
DEFAULT_PREDICTION_PLATFORM = "marconi100"


def no_post_window_cap(value: float | str | None) -> bool:
    """Whether a post-window cap setting means "no cap after the window" (None or ``"none"``, any case)."""
    return value is None or (isinstance(value, str) and value.strip().lower() == "none")
