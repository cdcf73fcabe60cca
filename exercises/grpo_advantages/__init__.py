"""Exercise `grpo-advantages`: group-relative outcome advantages (docs/contract.md §9)."""
