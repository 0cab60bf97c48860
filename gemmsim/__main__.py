"""``python -m gemmsim`` runs the command-line interface."""

from gemmsim.cli.main import main

raise SystemExit(main())
