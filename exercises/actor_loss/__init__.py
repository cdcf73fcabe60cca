"""Exercise `actor-loss`: the PPO clipped surrogate (EXERCISES.md section 1)."""
