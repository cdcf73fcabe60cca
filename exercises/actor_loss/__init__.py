"""Exercise `actor-loss`: the PPO clipped surrogate (docs/contract.md §1)."""
