"""wattsched.sim."""
