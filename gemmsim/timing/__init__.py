"""Counters to modelled time: ``cpu`` (a roofline of per-core roofs plus a latency roof, ECM sum beside it) and ``gpu``
(waves, pipes, shared memory, L2 and DRAM roofs). Timing knows counters and the machine, nothing of loops or caches.
May import: errors, units, machine.
"""
