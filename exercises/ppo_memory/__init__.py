"""Exercise `ppo-memory`: the four-model memory ledger of PPO, with ZeRO sharding (docs/contract.md §11)."""
