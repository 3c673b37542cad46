"""What a piece of eviction code computes, read from its syntax tree and blind to the names it uses.

Two views, both immune to renaming (no identifier the author chose survives):

- ``op_stream``: the tensor operations in evaluation order, each mapped to a canonical class
  (``torch.matmul``, ``@``, ``einsum`` and ``bmm`` are all ``matmul``; ``sum`` and ``mean`` are ``reduce``;
  ``topk``, ``sort`` and ``argsort`` are ``rank``), with helpers defined in the same file inlined at
  their call sites, control flow dropped (a loop over heads and a batched call give the same ops) and
  layout calls (``view``, ``transpose``, ``unsqueeze``...) ignored. Code similarity fingerprints this
  stream, so outlining a helper, reordering functions or vectorising a loop leaves it unchanged.
- ``features``: what the operations act on, by data flow from the harness interface (``view.keys``,
  ``view.queries``, ``view.attention``...): "norm of the keys", "softmax of query·key", "accumulated
  across calls", "initial-token slice plus recent slice", "mean and covariance of the queries"... Each
  feature carries the words papers use for it; the prior-art query is built from them.

The package, by analyser: ``vocabulary`` (the tables), ``syntax`` (node predicates, a module's definitions),
``graph`` (the operation graph and its stream and paths), ``flow`` (the feature tagger), ``features``
(``computation`` and ``called_names``).
"""

from reviewbench.evidence.computation.features import Computation, called_names, computation, scored_features
from reviewbench.evidence.computation.graph import DATA, Node, Op, op_graph, op_paths, op_stream
from reviewbench.evidence.computation.vocabulary import API_CALLS, CANON, FEATURE_WORDS, GENERIC

__all__ = ["API_CALLS", "CANON", "DATA", "FEATURE_WORDS", "GENERIC", "Computation", "Node", "Op", "called_names",
           "computation", "scored_features", "op_graph", "op_paths", "op_stream"]
