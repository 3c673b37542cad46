"""The tables the analysers read: canonical operation classes, the harness interface's helpers, the names that
are sizes rather than data, and the words papers use for each feature."""

from __future__ import annotations

import ast

# Canonical operation classes. Anything not listed (layout, dtype, device, shape queries) emits nothing.
CANON: dict[str, str] = {}
for _names, _op in [
    ("matmul bmm mm einsum baddbmm addmm addbmm addmv tensordot inner dot vdot vecdot outer multi_dot chain_matmul",
     "matmul"),
    ("softmax log_softmax", "softmax"),
    ("sum mean nansum nanmean", "reduce"),
    ("cumsum cumprod logcumsumexp", "cumsum"),
    ("amax amin max min maximum minimum", "extreme"),
    ("max_pool1d avg_pool1d max_pool2d avg_pool2d adaptive_max_pool1d adaptive_avg_pool1d lp_pool1d lp_pool2d conv1d",
     "pool"),
    ("topk argsort kthvalue argmax argmin", "rank"),
    ("gather index_select take_along_dim", "gather"),
    ("cat concat concatenate stack hstack vstack", "cat"),
    ("norm vector_norm linalg_norm", "norm"),
    ("normalize", "normalize"),
    ("rand randn randint randperm rand_like randn_like bernoulli multinomial standard_normal integers permutation "
     "choice choices permuted shuffle exponential standard_exponential gumbel standard_gumbel uniform",
     "random"),
    ("arange", "arange"),
    ("ones zeros full empty ones_like zeros_like full_like empty_like new_ones new_zeros new_full", "const"),
    ("eye", "eye"),
    ("masked_fill masked_fill_ where", "where"),
    ("triu tril", "triangle"),
    ("pad", "pad"),
    ("exp", "exp"),
    ("log log2 log1p", "log"),
    ("pow square", "pow"),
    ("scatter scatter_ scatter_add scatter_add_ index_add index_add_ bincount index_put_ index_put "
     "masked_scatter scatter_reduce sparse_coo_tensor", "scatter"),
    ("var std cov var_mean std_mean", "var"),
    ("fill_diagonal_ diagonal diag diag_embed", "diag"),
    ("nonzero argwhere flatnonzero", "nonzero"),
    ("abs", "abs"),
    ("clamp clamp_ clamp_min clamp_max clip", "clamp"),
    ("isin unique", "set"),
    ("cos sin", "trig"),
    ("logsumexp", "logsumexp"),
    ("sigmoid tanh relu gelu", "act"),
    ("all any logical_and logical_or logical_not", "logic"),
]:
    for _n in _names.split():
        CANON[_n] = _op
CANON["cosine_similarity"] = "normalize matmul"

# The harness interface's helpers, expanded to what they compute, so that calling them and writing the same
# computation out by hand give the same stream.
API_CALLS = {
    "attention": "matmul softmax",  # LayerView.attention: softmax(q k^T / sqrt d), causal (scaling is no op)
    "group": "reduce",  # LayerView.group: the GQA group reduced
    "from_topk": "rank",  # Keep.from_topk
    "rotate": "rope",  # LayerView.rotate
    "apply_rope": "rope",
    "rope_angles": "rope",
    "rotate_half": "rope",
    "repeat_kv": "",
}
BUILTINS_NOOP = frozenset({"max", "min", "sum", "abs", "int", "float", "len", "range", "round", "sorted"})
BINOPS = {ast.MatMult: "matmul", ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
          ast.FloorDiv: "div", ast.Pow: "pow", ast.Mod: "mod"}
INLINE_DEPTH = 4

# The harness interface's data, by attribute of the layer view: K keys, V values, Q queries, P positions, L layer
# index, B budget, S remembered state.
API_SOURCES = {"keys": "K", "values": "V", "queries": "Q", "positions": "P", "query_positions": "P",
               "layer": "L", "budget": "B", "state": "S", "valid": "P", "valid_mask": "P"}
# Attributes and calls that give sizes, types or devices: never data.
SIZES = frozenset({"shape", "dtype", "device", "ndim", "size", "numel", "dim", "len", "n_tokens", "n_kv_heads",
                   "group_size", "head_dim", "n_heads", "n_layers", "budget", "layer", "finfo", "iinfo"})

# Calls that wrap a function into another that runs it (vectorised, compiled, with arguments bound).
FUNCTION_WRAPPERS = frozenset({"vmap", "partial", "compile", "jit", "script"})

# Calls that build a trainable layer or load fitted weights.
LEARNED_CALLS = frozenset({"Linear", "Parameter", "Conv1d", "load", "load_state_dict", "from_pretrained", "load_file",
                           "Embedding", "MLP", "loadtxt", "genfromtxt"})

# Matrix factorisations, and the solves / inverses that stand for one (a Gram matrix inverted: leverage scores).
# Read by the feature tagger by name (not canonical operations: the code fingerprints stay as they were built).
FACTORISATIONS = frozenset({"svd", "svdvals", "svd_lowrank", "pca_lowrank", "qr", "eig", "eigh", "eigvals", "eigvalsh",
                            "cholesky", "cholesky_ex", "lu", "lu_factor"})
INVERSES = frozenset({"inv", "inverse", "pinv", "solve", "cholesky_solve", "lstsq", "solve_triangular",
                      "cholesky_inverse"})
# Library k-means (an operation, as topk is: the call is what it computes).
CLUSTERING = frozenset({"KMeans", "MiniBatchKMeans", "kmeans", "kmeans2", "kmeans_plusplus", "k_means"})
# The sign of a projection (a hash bit).
SIGN_CALLS = frozenset({"sign", "signbit", "heaviside"})
# Rounding to a grid, and casts to small integer types: applied to keys or values (scaled to a few levels), a
# quantiser. Read by the feature tagger by name, as the factorisations are.
QUANTISING_CALLS = frozenset({"round", "round_", "floor", "floor_", "ceil", "ceil_", "trunc", "trunc_", "fix",
                              "byte", "char", "short", "quantize_per_tensor", "quantize_per_channel",
                              "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"})
INTEGER_DTYPES = frozenset({"int8", "uint8", "int4", "uint4", "int2", "uint2", "int16", "qint8", "quint8", "quint4x2",
                            "int32", "int64", "long", "int", "short"})
# Casts of a tensor to an integer type by method (``(k / step).int()``, ``.long()``): applied to scaled keys or
# values, a truncation to a grid (on indices or positions they are no quantiser: those carry no key data).
INTEGER_CASTS = frozenset({"int", "long", "short", "char", "byte"})
# A fixed orthogonal matrix built without data (a Hadamard matrix, a Kronecker power of one, an orthogonal
# initialiser): multiplied into keys, a rotation (random ones come from a factorisation of random draws).
ORTHOGONAL_CALLS = frozenset({"hadamard", "kron", "orthogonal_", "ortho_group", "random_orthogonal"})
# The angle of a pair of coordinates (a polar transform): atan2, the argument of a complex number.
ANGLE_CALLS = frozenset({"atan2", "arctan2", "angle", "polar", "view_as_complex"})
# Frequency transforms (torch.fft, numpy.fft, scipy.fft): applied to keys or values along the tokens, a spectrum of
# the cache over positions (its low frequencies kept: a condensed cache); along the channels, no such thing.
SPECTRAL_CALLS = frozenset({"fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn",
                            "dct", "idct", "dst", "idst", "dctn", "idctn", "dstn", "idstn"})


# The features: what the operations act on, each with the words papers use for it (the prior-art query is built
# from them). GENERIC ones are shared by many methods and weigh once in the query, the rest twice.

FEATURE_WORDS = {
    "attention": "attention scores softmax query key",
    "last_query": "last query attention current token newest query",
    "window_queries": "observation window last queries recent queries attention",
    "all_queries": "attention received from all queries",
    "question_queries": "question queries prompt-guided attention",
    "window_kept": "observation window kept recent window",
    "pooling": "pooled attention pooling kernel smoothing clustering",
    "head_average": "head-averaged attention all heads layer-wise one token set per layer",
    "max_attention": "maximum attention max over queries",
    "successive_similarity": "each key against the key beside it consecutive adjacent successive keys change point",
    "carried_peak": "running maximum across evictions peak attention remembered from earlier rounds",
    "accumulate": "cumulative accumulated attention heavy hitters running sum",
    "decay": "forgetting factor exponential decay moving average",
    "key_norm": "key norm l2 norm low norm keys attention-free",
    "value_norm": "value norm value vectors",
    "key_similarity": "key cosine similarity redundancy redundancy-aware duplicate tokens",
    "mean_key": "cosine to mean key key diversity anchor",
    "query_statistics": "query mean covariance gaussian statistics future queries distribution",
    "future_rope": "future positions averaged rope rotation expected attention",
    "exp_logit": "expected attention exponential logit",
    "sinks": "attention sinks initial tokens start tokens sink",
    "recent": "recent tokens sliding window recent window",
    "layer_budget": "layer budget allocation per-layer schedule",
    "pyramid": "pyramid linear decrease with depth layer index budget",
    "head_budget": "head-wise budget adaptive allocation flattened top-k across heads",
    "random": "random eviction random scores uniform",
    "reconstruction": "context reconstruction repeat context query-agnostic",
    "decode": "decode-time eviction generation reasoning traces",
    "merge": "token merging merge evicted tokens",
    "entropy": "attention entropy",
    "uniform_positions": "position-based no scoring",
    "attention_threshold": "attention threshold count of tokens below threshold recovery ratio",
    "attention_variance": "attention variance temporal shift dispersion",
    "attention_propagation": "attention graph propagation pagerank random walk",
    "similarity_propagation": "similarity graph propagation key graph importance spread to similar tokens",
    "learned_weights": "learned weights trained scorer gate offline profiling head importance",
    "learned_gate": "per-head gate retrieval heads streaming heads static head profile table full cache or window",
    "key_projection": "keys projected on a fixed learned direction per head filter attention-free",
    "query_svd": "singular value decomposition of the queries principal direction query geometry filter",
    "leverage": "statistical leverage scores gram matrix decomposition sketch outlier keys values subspace",
    "key_variance": "dispersion of key and value channels standard deviation partition statistics",
    "minmax_norm": "min-max normalisation relative to reference statistics lag partition",
    "hashing": "locality-sensitive hashing sign bits random projection hamming distance",
    "attention_output": "attention output error value-aware output perturbation",
    "removal_rescale": "output change if dropped renormalised remaining weights leave one out",
    "attention_coverage": "attention mass coverage minimum tokens retaining a share of attention stopping criterion",
    "count_normalised": "normalised attention accumulated attention divided by the number of queries that see each "
                        "key saliency causal count",
    "count_damped": "accumulated attention divided by a square root or logarithm of its exposure the number of "
                    "queries that see each key partial normalisation",
    "query_reuse": "selection cache reused while consecutive queries stay similar query similarity to the "
                   "previous step",
    "key_envelope": "channel-wise minimum and maximum of keys per page upper bound of query key product page digest",
    "block_scores": "block page chunk granularity contiguous chunks pages blocks selected scores per block",
    "block_quota": "segments segmented heavy hitters strata quota per segment local maximum each segment keeps its own "
                   "top tokens",
    "group_budget": "budget shared out over groups of tokens in proportion to their attention mass adaptive quota "
                    "per group",
    "block_keys": "representative keys of each block landmarks block mean key query against block summaries",
    "antidiagonal": "antidiagonal sums strided block importance proxy sparse prefill",
    "copy_score": "retrieval heads copy score induction echo heads attention on the token being copied next "
                  "most attended token equals the next token to reproduce",
    "head_gate": "retrieval heads streaming heads split per prompt heads whose output changes little keep sinks and a "
                 "window the others the full cache",
    "query_votes": "each query's top-k nearest keys retrieved maximum inner product search fetch counts votes how many "
                   "queries picked each token",
    "key_clustering": "k-means clustering of keys centroids clusters selected by query centroid similarity",
    "layer_reuse": "selection of one layer reused by other layers filter layers shared indices across layers",
    "last_attended": "recency of the last strong attention milestone tokens time since last attended",
    "recurrence_interval": "maximum recurrence interval of strong attention lagged eviction overdue tokens",
    "learned_scorer": "trained scorer network predicts token importance retaining heads learned gate per token",
    "channel_selection": "selected channels partial query key dimensions channel pruning approximate scores",
    "importance_sampling": "tokens sampled with a probability from their scores importance sampling estimator",
    "low_rank_scores": "low-rank key projection principal components approximate attention reduced dimension",
    "sign_sketch": "sign bits of a random gaussian projection of the keys johnson-lindenstrauss sketch with the query "
                   "projected unquantised asymmetric inner product estimator 1-bit key quantization key norms",
    "quantised": "quantised keys values low-bit quantization integer levels rounding per-channel scale zero point "
                 "mixed precision",
    "quantised_scores": "attention over a low-bit quantised copy of the keys speculative selection low-precision "
                        "cache as a scoring proxy prefetch top keys",
    "diagonal_sums": "vertical slash sparse pattern attention summed along diagonals query-key distance offsets "
                     "slash lines column sums last queries estimate",
    "layer_span": "ladder-shaped positional spans shifted with the layer index each layer keeps a different contiguous "
                  "range of tokens layer-dependent span",
    "pre_rope": "pre-RoPE keys rotary embedding undone keys rotated back to their position-free frame",
    "rotation": "random rotation orthogonal hadamard preconditioning before quantisation incoherence processing",
    "polar": "polar coordinates angles of coordinate pairs quantised angles radii polar transformation",
    "residual_low_rank": "low-rank approximation of the quantisation residual error correction svd of the residual "
                         "near-lossless low-bit plus low-rank plus sparse",
    "layer_similarity": "cross-layer similarity adjacent layers keys directions slerp merge across depth previous "
                        "layer cache angular distance",
    "head_clustering": "heads clustered by their attention patterns similar heads share one attention redundant heads "
                       "correlation between heads",
    "chunked_refill": "fixed-size pot compressed as it fills chunk by chunk continual compression streaming context "
                      "kept set refilled",
    "rank_aligned": "per-head selections aligned by rank composite tokens sorted scores aggregated across heads "
                    "structured equal-length layout",
    "grouped_head_basis": "low-rank latent shared by a group of heads grouped-head decomposition heads concatenated "
                          "along channels",
    "transform_coded": "transform coding keys projected on their principal components pca decorrelation then "
                       "quantised coefficients bit allocation per component",
    "cross_layer_basis": "cross-layer svd joint factorisation of several layers keys concatenated shared subspace "
                         "across layers",
    "mixed_precision": "mixed precision important tokens kept at full precision the others low-bit importance-aware "
                       "quantisation instead of eviction",
    "age_decay": "retention rate per token from its key and value decayed with the token's age rate to the power of "
                 "the age temporal decay of intrinsic importance memory-bounded retention",
    "query_key_basis": "joint eigenbasis of keys and queries eigendecomposition low-rank attention computed in the "
                       "reduced eigen space",
    "token_spectrum": "frequency domain transform of the keys and values along the tokens discrete cosine transform "
                      "fourier transform low-frequency components kept spectral compression of the cache",
    "similarity_suppression": "scores of tokens similar to the already selected ones decayed redundancy suppression "
                              "propagated over a key similarity graph diverse selection",
    "coarse_to_fine": "hierarchical tree search coarse to fine blocks refined best branches kept and split again "
                      "shrinking block size top-k estimation",
    "attention_trend": "trend of the attention a token receives over time least-squares slope of attention against "
                       "the step rising or falling attention momentum extrapolated attention",
    "pick_neighbours": "the tokens beside the chosen ones kept too neighbours successors of the selected anchors "
                       "context around the top tokens expanded",
}

GENERIC = frozenset({"attention", "window_queries", "all_queries", "window_kept", "pooling", "recent", "decode",
                     "uniform_positions", "question_queries"})

# Calls that change a container in place (``self.trail.append(keys)``, ``MEMO.update(...)``), and those that change a
# tensor in place: on the module's instance or a name of the module, what the next call can read.
CONTAINER_MUTATORS = frozenset({"append", "extend", "add", "update", "setdefault", "pop", "insert", "appendleft",
                                "clear", "remove", "discard", "popitem", "__setitem__"})
TENSOR_MUTATORS = frozenset({"copy_", "fill_", "add_", "mul_", "index_put_", "scatter_", "scatter_add_",
                             "masked_fill_", "zero_"})
