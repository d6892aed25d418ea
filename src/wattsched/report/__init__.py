"""wattsched.report."""
