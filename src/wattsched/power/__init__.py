"""wattsched.power."""
