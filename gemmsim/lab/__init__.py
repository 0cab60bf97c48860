"""Interactive labs in the browser (``gemmsim lab``): one page, five labs, every number from gemmsim's models.

``api`` answers the page's JSON requests by calling the real models (``gemmsim.report.explain`` for the cache walk,
``gemmsim.sim.cpu.simulate_cpu`` for blocking, the machine files and ``gemmsim.analytic.workload`` for the roofline,
``gemmsim.models.banks`` and ``gemmsim.models.waves``); ``server`` serves the page and the API from one
standard-library HTTP server on 127.0.0.1; ``static_page`` writes a self-contained page with a precomputed grid
of cases. The front end (``static/``) is plain HTML, CSS and JavaScript with no build step and nothing fetched
from the network.
"""

from gemmsim.lab.api import LABS, LabError, answer

__all__ = ["LABS", "LabError", "answer"]
