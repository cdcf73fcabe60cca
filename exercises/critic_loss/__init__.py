"""Exercise `critic-loss`: the PPO value loss with optional value clipping (EXERCISES.md section 4)."""
