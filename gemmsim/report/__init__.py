"""Presenting results: ``tables`` (terminal table, results.csv/json, reading results folders), ``html`` (report.html),
``explain`` (a tiny case access by access), ``figures`` (matplotlib figures by experiment family). Presentation only:
these modules do not change what a case computes, so the results cache ignores them. May import: sim and below.
"""
