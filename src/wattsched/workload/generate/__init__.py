"""wattsched.workload.generate."""
