"""Exercise `whiten`: masked advantage normalization (docs/contract.md §7)."""
