"""Exercise `pairwise-loss`: the Bradley-Terry reward-model loss (EXERCISES.md section 6)."""
