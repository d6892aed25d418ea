"""Each paper's experiment in one command, with a report that sets the paper's numbers beside ours.

``reproduce("000", Path("out"), quick=True)`` (or ``wattsched reproduce 000 --quick``) runs paper 000's experiment
and writes ``results.parquet``, the figures, ``claims.json`` and ``REPORT.md``/``REPORT.html``. The claims come
from the catalogue in ``claims/NNN.toml``; every value on our side is computed from the run by the paper's module
``paperNNN.py``. See docs/reproduce.md.
"""

from wattsched.reproduce.claims import PAPERS, Claim, ClaimResult, Spread, catalogue
from wattsched.reproduce.runner import PaperRun, ReproduceContext, ReproduceError, Reproduction, reproduce

__all__ = [
    "PAPERS",
    "Claim",
    "ClaimResult",
    "PaperRun",
    "ReproduceContext",
    "ReproduceError",
    "Reproduction",
    "Spread",
    "catalogue",
    "reproduce",
]
