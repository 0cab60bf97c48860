"""The command line: ``main`` (argument parsing, the CPU and machine verbs, dispatch to the verb groups), ``common``
(shared parsing helpers), ``gpu``, ``systolic``, ``report`` (their verbs). The CLI only parses, calls the library and
formats. May import everything.
"""

from gemmsim.cli.main import main

__all__ = ["main"]
