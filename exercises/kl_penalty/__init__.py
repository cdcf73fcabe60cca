"""Exercise `kl-penalty`: the k1, k2 and k3 per-token KL estimators (docs/contract.md §8)."""
