"""wattsched.core."""
