"""Exercise `gae`: Generalized Advantage Estimation over padded responses (EXERCISES.md section 3)."""
