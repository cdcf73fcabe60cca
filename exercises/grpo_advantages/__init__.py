"""Exercise `grpo-advantages`: group-relative outcome advantages (EXERCISES.md section 9)."""
