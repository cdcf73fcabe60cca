"""Exercise `token-rewards`: KL-shaped per-token rewards with the reward model's score at the
last valid token (docs/contract.md §5)."""
