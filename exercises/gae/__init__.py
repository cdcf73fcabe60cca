"""Exercise `gae`: Generalized Advantage Estimation over padded responses (docs/contract.md §3)."""
