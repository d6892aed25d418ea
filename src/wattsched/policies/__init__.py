"""wattsched.policies."""
