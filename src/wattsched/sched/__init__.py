"""wattsched.sched."""
