"""Closed forms, no simulation: ``blis`` (analytical KC/MC/NC/MR/NR of the Goto/BLIS kernels), ``edges`` (partial tiles
and their cost), ``workload`` (a Transformer layer as its GEMMs). May import: errors, units, schema, machine.
"""
