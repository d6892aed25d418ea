"""wattsched: power- and energy-aware HPC batch scheduling."""

__version__ = "0.1.0"
