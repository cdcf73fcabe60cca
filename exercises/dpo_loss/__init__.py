"""Exercise `dpo-loss`: the Direct Preference Optimization loss (docs/contract.md §10)."""
