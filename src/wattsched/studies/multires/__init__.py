"""wattsched.studies.multires."""
