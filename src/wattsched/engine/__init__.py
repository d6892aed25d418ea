"""wattsched.engine."""
