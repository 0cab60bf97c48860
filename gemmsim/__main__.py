"""``python -m gemmsim`` runs the command-line interface."""

from gemmsim.cli import main

raise SystemExit(main())
