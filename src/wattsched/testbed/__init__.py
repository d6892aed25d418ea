"""wattsched.testbed: a throwaway local Slurm cluster with synthetic node power, for trying the advisor and for
its tests (docs/testbed.md)."""
