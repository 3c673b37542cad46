"""reviewbench: reviews KV-cache eviction submissions in an automated-research arena.

Data flows one way: bundle -> audit/evidence -> judges -> verdict -> points -> report.
"""

import os

# OpenMP threads that sleep at barriers instead of spinning (set before anything imports torch; a policy the
# user set wins): a review beside another CPU-bound job otherwise runs several times slower than its share of
# the cores (harness.sandbox.thread_env gives the numbers; its workers and methods get the same setting).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"
