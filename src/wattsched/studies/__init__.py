"""wattsched.studies."""
