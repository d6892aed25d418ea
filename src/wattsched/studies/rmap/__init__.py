"""wattsched.studies.rmap."""
