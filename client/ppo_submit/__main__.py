"""``python -m ppo_submit`` runs the CLI."""

from .cli import main

main()
