"""Exercise `rloo-advantages`: RLOO (REINFORCE leave-one-out) advantages, an example pack's exercise."""
