"""Exercise `critic-loss`: the PPO value loss with optional value clipping (docs/contract.md §4)."""
