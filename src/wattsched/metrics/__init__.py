"""wattsched.metrics."""
