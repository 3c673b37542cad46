"""reviewbench: reviews KV-cache eviction submissions in an automated-research arena.

Data flows one way: bundle -> audit/evidence -> judges -> verdict -> points -> report.
"""

__version__ = "0.1.0"
