"""Shared test setup: make ``tests/reference`` (the naive models fast ones are checked against) importable as
``reference``, whatever pytest's import mode."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
