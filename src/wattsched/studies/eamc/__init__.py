"""wattsched.studies.eamc."""
