"""Sub-command implementations behind kvlint/cli.py."""
