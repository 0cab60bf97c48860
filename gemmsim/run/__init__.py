"""Running experiments: ``experiment`` (the experiment-file schema and its expansion into cases), ``runner`` (the whole
flow, load -> cases -> simulate -> host -> results), ``executor`` (local processes or Dask), ``host`` (the same kernels
run for real on this machine). May import: report, sim and everything below it.
"""
