"""wattsched.predict: online job power and runtime predictors and their evaluation."""
