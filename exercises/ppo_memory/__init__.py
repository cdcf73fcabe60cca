"""Exercise `ppo-memory`: the four-model memory ledger of PPO, with ZeRO sharding (EXERCISES.md section 11)."""
