"""Exercise `masked-actor-loss`: the PPO clipped loss over padded [B, T] responses, aggregated
per sequence or per token (docs/contract.md §2)."""
