"""wattsched.dataset: per-job power datasets from job tables and node telemetry (the PM100 method)."""
