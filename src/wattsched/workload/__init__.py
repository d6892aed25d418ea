"""wattsched.workload."""
