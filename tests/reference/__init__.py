"""Naive reference models: plain Python lists and dicts, written for clarity, not speed.

The fast numba models in ``gemmsim.models`` must agree with these exactly (counters and output streams) on
random and edge-case traces. Nothing here imports the fast models' code.
"""
