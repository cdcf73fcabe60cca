"""Exercise `token-rewards`: KL-shaped per-token rewards with the reward model's score at the
last valid token (EXERCISES.md section 5)."""
