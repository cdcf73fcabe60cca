"""Exercise `pairwise-loss`: the Bradley-Terry reward-model loss (docs/contract.md §6)."""
