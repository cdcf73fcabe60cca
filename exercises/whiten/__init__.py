"""Exercise `whiten`: masked advantage normalization (EXERCISES.md section 7)."""
