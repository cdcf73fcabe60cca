"""Exercise `dpo-loss`: the Direct Preference Optimization loss (EXERCISES.md section 10)."""
