"""Mechanisms stated in prose, as concepts, each with the operations it requires of code.

A concept (a count sketch, a low-rank residual, a learned scorer, clustering, a codebook, entropy, a Kalman
filter, curvature, mutual information, optimal transport...) is known by many phrasings. Each phrasing is a
sequence of word stems (``clust*`` matches cluster, clusters, clustered, clustering; ``~`` allows up to three words
between two stems), matched on text lower-cased with every non-alphanumeric character read as a space (so
"k-means", "k means" and "low-rank" / "low rank" are one phrasing), so inflection and hyphenation do not matter.
What a concept requires of code is said three ways:

- ``shows``: data-flow features of ``evidence.computation`` any one of which computes it;
- ``could``: names of called operations (``called_names``) that a loose reading says could compute it;
- ``shows`` may also name ``centred``, a shape of the code that computes it outright (``structures``: a value minus
  its own mean multiplied by a centred value: squared deviations, a variance or a covariance matrix);
- ``structure``: a shape of the code that could compute it (``state``: a value carried across calls;
  ``recurrence``: a value updated from itself in a loop; ``loop``: such a loop with a matrix product; ``shift``: a difference of a tensor with a shifted copy of itself).

``reads`` names the interface data a concept cannot be computed without (a value norm reads the values): code
that never reads them lacks it whatever it calls.

A concept with neither ``could`` nor ``structure`` (recency, a query window, budgets) cannot be shown absent by
calls: words alone. ``needs`` names the missing operation for a proof.

``stated``: whether a mention in a sentence states the concept as what *this* method does — not negated
("no clustering", "training-free"), not another work's (an index paper's name or "prior methods" before it, a
contrast), not future work or a hypothetical ("could", "would", "future work"), not a goal or an interpretation
("a proxy for mutual information", "to minimise the KL divergence", "akin to a Kalman filter", "approximates the
entropy by ..."), not an observation about the data ("because keys are low-rank", "attention typically ...").

``implied_features``: the features a paper's own text (its index entry) states, for credit coverage.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from reviewbench.evidence.computation.syntax import callee
from reviewbench.evidence.computation.vocabulary import CONTAINER_MUTATORS, TENSOR_MUTATORS


@dataclass(frozen=True)
class Concept:
    label: str
    phrases: tuple[re.Pattern[str], ...]
    shows: frozenset[str]
    could: frozenset[str]
    structure: frozenset[str]
    needs: str
    budget: bool = False  # "same", "fixed", "uniform", "equal" before it also negate it (budgets)
    reads: frozenset[str] = frozenset()  # interface data it cannot be computed without (``Computation.reads``)

    @property
    def words_only(self) -> bool:
        return not self.could and not self.structure


def _token(tok: str) -> str:
    alts = []
    for a in tok.split("|"):
        if "*" in a[:-1] or not a:
            raise ValueError(f"a phrasing's word takes '*' only at its end: {tok!r}")
        if a == "#":
            alts.append(r"\d+")
        elif a.endswith("*"):
            alts.append(re.escape(a[:-1]) + r"[a-z0-9]*")
        else:
            alts.append(re.escape(a))
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


def _phrase(spec: str) -> re.Pattern[str]:
    """``"learn*|train* ~ scor*"`` -> a regex over normalised text (see the module doc)."""
    parts: list[str] = []
    gap = 0
    for tok in spec.split():
        if tok in ("~", "~~"):
            gap = 12 if tok == "~~" else 3  # a few words between, or a clause
            continue
        if parts:
            parts.append(rf" +(?:[a-z0-9]+ +){{0,{gap}}}" if gap else r" +")
        parts.append(_token(tok))
        gap = 0
    return re.compile(r"(?<![a-z0-9])" + "".join(parts) + r"(?![a-z0-9])")


def _c(label: str, phrases: list[str], shows: str, could: str, needs: str, structure: str = "",
       budget: bool = False, reads: str = "") -> Concept:
    return Concept(label, tuple(_phrase(p) for p in phrases), frozenset(shows.split()), frozenset(could.split()),
                   frozenset(structure.split()), needs, budget, frozenset(reads.split()))


LEARNED_CALLS = ("Linear Parameter Conv1d load load_state_dict from_pretrained load_file Embedding MLP loadtxt "
                 "genfromtxt fit train backward zero_grad Adam AdamW SGD Sequential LogisticRegression "
                 "MLPClassifier lstsq solve cholesky_solve pinv Ridge LinearRegression")
LOGS = "log log2 log1p xlogy entr special_entr kl_div log_softmax cross_entropy nll_loss logsumexp"
RANDOM = ("rand randn randint randperm rand_like randn_like normal normal_ uniform_ bernoulli multinomial "
          "manual_seed Generator orthogonal_ default_rng standard_normal integers permutation RandomState")
FACTOR = ("svd svdvals svd_lowrank pca_lowrank qr eig eigh eigvals eigvalsh cholesky cholesky_ex lu lu_factor inv "
          "inverse pinv solve cholesky_solve lstsq solve_triangular cholesky_inverse matrix_rank matrix_power")
# operations that compute something of their input (a logarithm, a norm, a variance, a factorisation): a call of
# one on constants alone (``torch.log(self.fade)``) computes nothing a stated mechanism could be. Not random draws or
# trainable layers: those are made from constants by nature.
DATA_TRANSFORMS = frozenset(LOGS.split()) | frozenset(FACTOR.split()) | frozenset(
    {"norm", "vector_norm", "matrix_norm", "var", "std", "var_mean", "std_mean", "cov", "corrcoef"})

# Order matters: a span of text one concept's phrasing takes is not read again by a later concept
# ("eigenvector centrality" is graph propagation, not a factorisation; "second-order statistics" a variance).
CONCEPTS: list[Concept] = [
    _c("graph propagation",
       ["page rank*", "pagerank*", "power method*|iteration*", "random walk*", "eigenvector centrality",
        "centrality", "stationary distribution*", "graph laplacian*", "message passing",
        "propagat* ~ graph*|attention", "diffus* over|on|through ~ graph*"],
       "attention_propagation similarity_propagation", "matrix_power eig eigh eigvals svd",
       "attention composed with attention (A @ A, a power iteration or an eigenvector)", structure="loop"),
    # a graph over the tokens and its spectrum (a k-NN or affinity graph, its Laplacian, the Fiedler vector):
    # pairwise similarities of keys and an eigenvector or a power iteration over them
    _c("a similarity graph / spectral partition",
       ["fiedler*", "laplacian*", "spectral bisection*|partition*|region*|embedding*|cut*|graph*",
        "k nearest neighbo* graph*", "knn graph*", "nearest neighbo* graph*", "affinity graph*|matri*",
        "similarity graph*", "lanczos", "normali* cut*", "graph cut*"],
       "key_similarity attention_propagation similarity_propagation",
       "eig eigh eigvals eigvalsh lobpcg svd svd_lowrank cdist "
       "cosine_similarity normalize matrix_power",
       "pairwise similarities of the tokens (a graph) and its spectrum (an eigenvector or a power iteration)"),
    _c("variance",
       ["variance*", "covarianc*", "standard deviation*", "second order statistic*|moment*", "dispersion"],
       "attention_variance query_statistics key_variance centred gram", "var std var_mean std_mean cov",
       "a variance (squared deviations from a mean)"),
    _c("learned weights",
       ["learn*|learnt|learnable|trained|trainable|fitted|finetuned|tuned|distilled ~ scorer*|scoring|weight*|"
        "gate*|gating|predictor*|polic*|importance*|coefficient*|probe*|network*|net|mlp*|table*|classifier*|"
        "regressor*|router*|estimator*|embedding*|parameter*|projection*|filter*",
        "a|an|small|tiny|lightweight|auxiliary|separate|our learned|trained|learnable model*",
        "mlp*", "multilayer perceptron*", "multi layer perceptron*", "neural network*|scorer*|gate*|predictor*|"
        "model*|net*", "classifier*", "regressor*", "logistic regression", "linear probe*", "gradient descent",
        "backprop*", "supervised", "reinforcement learning", "policy gradient*", "q learning",
        "scorer*|predictor*|gate*|network*|mlp*|probe*|weights|classifier*|regressor*|table*|coefficient* ~ trained|"
        "learned|learnt|fitted|fit|distilled", "trained|learned offline", "offline training",
        "ridge regression*", "fitted|fit|trained|learned|tuned on ~ "
        "calibration|training|held out "
        "prompts|data|set|examples|samples"],
       "learned_weights learned_gate key_projection", LEARNED_CALLS,
       "fitted numbers (a trained layer, loaded weights, or a table of fitted values the score reads)"),
    _c("entropy",
       ["entrop*", "surprisal*", "kl divergence*", "kullback", "shannon", "information gain*", "negative log prob*"],
       "entropy", LOGS, "a logarithm of the attention probabilities (p log p)"),
    _c("mutual information",
       ["mutual information", "pointwise mutual", "pmi", "information bottleneck"],
       "entropy", LOGS, "a logarithm of a ratio of joint and marginal probabilities"),
    _c("clustering",
       ["clustering|clusterings", "k mean*|medoid*", "kmean*|kmedoid*", "centroid*", "medoid*",
        "cluster*|group* key*|token*|value*|vector*",
        "cluster*|group* the|its|each|all|similar|nearby|neighbouring|neighboring key*|token*|value*|vector*|entr*",
        "clusters of ~ key*|token*|value*|vector*", "cluster center*|centre*|assignment*|representative*|label*",
        "hierarchical|agglomerative|spectral|density cluster*"],
       "key_similarity mean_key merge", "kmeans KMeans cdist cosine_similarity normalize argmin fit_predict "
       "pairwise_distance dist linkage",
       "distances of keys to cluster centres (a key-key similarity) and an assignment to them", structure="loop"),
    # how many clusters, searched: a model-selection test over several counts (an elbow, a silhouette, an
    # information criterion) or clusters split until a test stops them. Only phrasings of a search: a count "set per
    # head from its length" is a formula the code may compute outright
    _c("a searched number of clusters",
       ["elbow*", "silhouette*", "information criteri*", "gap statistic*",
        "split* the|each|a loosest|widest|largest|worst ~ cluster*|group*|constellation*|centroid*|one*",
        "adaptive split*", "split* ~ until", "cluster*|group*|centroid* ~ until ~ spread*|error*|distortion*|"
        "inertia*|variance* ~ stop*"],
       "", "silhouette_score calinski_harabasz_score davies_bouldin_score",
       "a search over cluster counts (clusterings at several counts compared, or clusters split until a test "
       "stops them)", structure="sweep"),
    _c("a codebook / vector quantisation",
       ["codebook*", "code book*", "codeword*", "code word*", "vector quanti*", "product quanti*", "quantiz*|quantis*"],
       "key_clustering", "round floor bucketize quantize_per_tensor quantize_per_channel fake_quantize_per_tensor_affine cdist "
       "argmin kmeans", "keys or values rounded to discrete levels or assigned to codewords (an argmin over "
                        "distances)"),
    _c("a sketch / hashing",
       # "sketch" alone names any compressed summary (a quantised or low-rank copy is one): a random, hashed or
       # counting sketch is this concept
       ["count min", "countmin*", "countsketch*", "count|random|randomi*|hash*|hashed|gaussian|sign|streaming sketch*",
        "sketch* ~ random*|hash*|gaussian*|sign*|count*|projection*", "sketching matri*", "hash*", "locality sensitive", "lsh", "simhash", "minhash",
        "bloom filter*", "random projection*", "random gaussian|gaussian|orthogonal matri*|projection*",
        "random matri*|features|rotation*|subspace*", "johnson lindenstrauss", "jl lemma|transform|projection*"],
       "hashing", RANDOM + " hash sign signbit heaviside scatter_add scatter_add_ index_add index_add_ bincount",
       "a random projection or hash of the keys (random draws, sign bits or hashed buckets)"),
    _c("a low-rank approximation",
       ["low rank", "rank # ~ basis|approximation*|projection*|subspace*|sketch*|factor*|residual*|summar*|reconstruct*",
        "rank r|k ~ basis|approximation*|projection*|subspace*|factor*|residual*", "singular value*|vector*",
        "svd", "pca", "principal component*|direction*|subspace*|axis|axes", "eigen*",
        # a subspace of its own (the keys' dominant one, one spanned or fitted); a head dimension split into
        # subspaces (a product codebook's) is a partition of channels, which no factorisation computes
        "dominant|principal|leading|top|spanned|fitted|learned|linear|orthogonal|orthonormal|rank subspace*",
        "subspace* spanned|of rank|fitted", "nystrom*",
        "leverage score*", "cur decomposition*", "matrix factori*|factoris*", "factoriz*|factoris*",
        "orthonormal|orthogonal|fitted|learned basis", "low dimensional basis|subspace*|projection*", "residual* from|to|of|after ~ basis|"
        "projection*|subspace*|reconstruction*|approximation*", "project* onto ~ subspace*|basis|principal|leading"],
       "query_svd leverage key_projection", FACTOR,
       "a factorisation (SVD, QR, an eigendecomposition, least squares) or a projection onto fitted directions"),
    _c("a Kalman / Bayesian filter",
       ["kalman", "bayesian ~ filter*|update*|estimat*|posterior*|inference|belief*", "posterior*",
        "particle filter*", "hidden markov", "state space model*", "belief state*|update*",
        "recursive least squares", "recursive filter*|estimat*"],
       "decay accumulate query_statistics attention_variance", "",
       "a recursive estimate carried across steps (a state updated from its previous value)",
       structure="state recurrence"),
    # a score carried from one eviction (one call) to the next: said of the calls, not of the queries of one call
    # ("summed across the window's rows" is one call's aggregation)
    _c("a memory across evictions",
       ["accumulat*|carr*|kept|summed|added|remember*|decay*|running|stored ~ across|between|over evictions|rounds|"
        "calls|compressions", "from one eviction|round|call|compression ~ to the next", "across|between|over "
        "successive evictions|rounds|calls|compressions", "per round|eviction decay*", "decay* of # ~ per "
        "round|eviction|call|compression"],
       "accumulate decay", "remember recall",
       "a score stored at one call and read back at the next (view.remember/recall or the module's own state)",
       structure="state"),
    # a score said to fade at a stated rate: a factor applied step by step, which a plain running sum is not
    _c("a decay over time",
       ["half life*|halflife*", "loses|lose|losing half ~ score*|weight*|mass|total*", "decays|decay|fades|fade ~ "
        "by|per|every|each ~ step*|token*|call*|eviction*"],
       "decay age_decay", "pow exp exp2 cumprod float_power",
       "a stored score scaled by a decay factor at each step", structure="recurrence"),
    _c("an exponential moving average / decay",
       ["exponential* moving averag*", "exponential* weighted", "ema", "exponential* decay*", "decay factor*",
        "decay rate*", "decayed", "forgetting factor*", "momentum", "time decay*"],
       "decay accumulate pooling", "cumsum cumprod",
       "a running score carried across steps and scaled by a decay factor", structure="state recurrence"),
    # the smallest set covering a share of the attention mass (top-p), or a quantile of the scores
    _c("attention-mass coverage (top-p)",
       ["top p", "nucleus", "cumulative ~ mass|share|probabilit*", "smallest set ~ cover*|reach*|whose|that",
        "mass ~ covered|covers|reaches|reached|exceeds", "quantile*", "percentile*",
        # a share of the attention said to pass a bar (a test on where the attention falls)
        "share|fraction|proportion of ~ attention ~~ exceeds|exceed|exceeding|tops|passes|crosses|above",
        "share|fraction|proportion of it|which|that ~~ exceeds|exceed|exceeding|tops|passes|crosses|above"],
       "attention_threshold attention_coverage", "cumsum sort argsort msort quantile nanquantile kthvalue "
       "searchsorted cummax", "scores sorted and summed until a share is covered, a quantile of them, or the attention "
       "on some tokens compared with a bar"),
    _c("accumulated attention",
       ["accumulat*", "cumulative", "heavy hitter*", "running sum*"],
       "accumulate window_queries all_queries question_queries", "cumsum sum remember recall",
       "attention summed over queries or across steps"),
    _c("optimal transport",
       ["optimal transport", "wasserstein", "earth mover*", "sinkhorn", "transport plan*|cost*|map*", "kantorovich"],
       "", "cdist logsumexp sinkhorn emd wasserstein_distance linear_sum_assignment",
       "a transport plan between two distributions (a cost matrix with Sinkhorn iterations or an assignment)",
       structure="loop"),
    _c("submodular / diversity selection",
       ["submodular*", "determinantal", "dpp", "facility location", "maximal marginal relevance", "mmr", "coreset*",
        "greedy ~ coverage|diversit*|maximi*|maximis*", "log ~ det|determinant*", "logdet*", "slogdet"],
       "key_similarity mean_key leverage", "det logdet slogdet cholesky cdist cosine_similarity normalize",
       "a similarity between tokens and an iterative (greedy) selection over it", structure="loop"),
    _c("second-order / curvature",
       ["hessian*", "curvature*", "fisher", "second|2nd order ~ taylor|approx*|expan*|sensitiv*|deriv*|"
        "term*|method*|information|optimi*|saliency", "taylor expan*|approx*|series", "gradient*", "jacobian*",
        "optimal brain", "second derivative*|difference*", "finite difference*"],
       "", "grad backward hessian jacobian vjp jvp hvp requires_grad_ enable_grad diff gradient roll",
       "derivatives (autograd, or finite differences of the score)", structure="shift"),
    _c("a frequency-domain transform",
       ["fourier", "fft", "frequency domain", "discrete cosine", "dct", "wavelet*", "low|high|band pass",
        "spectral energy|density|analysis|filter*|decomposition"],
       "", "fft rfft irfft fft2 fftn rfftn stft dct conv1d", "a Fourier-type transform of the scores or keys"),
    _c("a bandit / reinforcement policy",
       ["bandit*", "upper confidence bound*", "ucb", "thompson sampling", "reward signal*|function*|model*",
        "multi armed"],
       "learned_weights learned_gate decay accumulate", LEARNED_CALLS,
       "estimates updated from feedback across steps (a state carried between calls)", structure="state"),
    _c("token merging",
       # "merged into" / "folded into" say merging where tokens are what is merged, or what they are merged into
       # ("a score folded into two running averages" is an update, no merge)
       ["merg* ~ token*|key*|entr*|value*", "token*|key*|keys|entr*|value*|evicted|dropped|pruned|discarded ~ "
        "merged|folded into", "merged|folded into ~ kept|nearest|neighbo*|surviv*|retained|remaining|closest|"
        "similar|representative*|centroid*|anchor*|slot*|entr*|summar*|residue*|it|them", "averag* evicted|dropped ~ token*|key*",
        "token*|key*|keys|entr*|evicted|dropped|remaining ~ absorbed|absorb|collapsed",
        # ("fused" alone is also an adjective: "the top fused scores" of a rank fusion names no merge of tokens)
        "token*|key*|keys|entr*|evicted|dropped|remaining ~ fused together|with|into", "absorbed|fused|collapsed into ~ "
        "kept|nearest|neighbo*|surviv*|retained|remaining|closest|similar|representative*|slot*"],
       "merge", "index_add index_add_ scatter_add scatter_add_ scatter_reduce",
       "evicted entries combined into kept ones (a weighted sum scattered into the cache)"),
    _c("key norms",
       ["key l2|l1 norm*", "key norm*", "key l2|l1", "norm* of ~ key*", "k norm*", "knorm*", "key magnitude*"],
       "key_norm", "norm vector_norm", "the norm of each key"),
    _c("value norms",
       ["value l2|l1 norm*", "value norm*", "norm*|magnitude* of ~ value*", "value magnitude*"],
       "value_norm", "norm vector_norm", "the norm of each value", reads="V"),
    # the values themselves in the score (their distance to the readout, a value-weighted score). Strict where the
    # code never reads the values at all (``structure="values"``: the data flow's ``Computation.reads``). Only
    # phrasings that name the values: "keys and values" names the cache, and "the attention output" is also what an
    # attention-only score says it preserves
    _c("the values / the attention output",
       ["value vector*", "value state*", "value content*", "value aware", "value weighted", "value distance*",
        "distinctive value*", "distance*|difference*|deviation*|displacement* of|between|from ~ value*"],
       "value_norm attention_output merge", "", "the values (view.values) in the score", structure="values"),
    # a selection carried from one layer to another: each layer is a call of its own, so the code needs memory
    # across calls (``structure="state"``); words for budgets shared across layers are the budgets' concept
    _c("cross-layer reuse",
       ["reus* ~ previous|preceding|earlier|shallower|lower|first|adjacent layer*",
        "previous|preceding|earlier|shallower|lower|adjacent layer* selection*|choice*|indices|decision*|mask*|"
        "kept set*",
        "selection*|indices|kept set*|mask*|decision* ~ shared|reused|inherited|copied|carried ~ across|between|"
        "from ~ layer*",
        "selection*|choice*|indices|decision*|mask* of|from the|an ~ previous|preceding|earlier|shallower|lower|"
        "adjacent layer*",
        "cross layer selection*|reuse|sharing|inheritance", "inter layer selection*|reuse|sharing",
        "inherit* ~ previous|preceding|earlier|shallower|lower|adjacent layer*",
        "reus*|inherit*|copies|copy ~ selection*|indices|choice*|kept set*|mask* ~ layer below|beneath",
        # a score handed from layer to layer ("0.3 x the previous layer's standing", "carried down the stack")
        "previous|preceding|earlier|shallower|lower|adjacent layer* s ~ score*|standing*|importance|ranking*|"
        "estimate*|attention",
        # (a hybrid model's layers named by their kind: "the previous attention layer's scores")
        "previous|preceding|earlier|shallower|lower|adjacent ~ attention layer* s ~ score*|standing*|importance|"
        "ranking*|estimate*|attention|selection*|indices|choice*",
        "score*|standing*|importance|ranking* ~ carried|passed|propagated|handed ~ down|across|through ~ stack|"
        "layers|depth", "layer above|below it ~ gave|assigned|computed",
        # what another layer kept, named by that layer ("tokens the previous layer kept get a bonus")
        "token*|entr*|position* ~ previous|preceding|earlier|shallower|lower|adjacent layer kept|chose|selected|"
        "retained|picked|evicted|dropped"],
       "layer_similarity layer_reuse cross_layer_basis", "", "a selection kept from one layer's call for another's",
       structure="state"),
    # the rotary embedding undone (keys compared in their position-free frame) or read (its frequencies, phases)
    _c("rotary un-rotation",
       ["pre rope|rotary|rotation", "before ~ rope|rotary", "un rotat*", "unrotat*",
        "undo* ~ rope|rotary|rotation*", "inverse rope|rotary|rotation*", "de rotat*", "derotat*",
        "rotat* back", "position free key*", "rope|rotary frequenc*|phase*|angle*",
        "rope|rotary|rotation undone|removed|reversed|inverted|stripped",
        "rope|rotary|rotation is|are|was|gets|being undone|removed|reversed|inverted|stripped",
        "position free|positionless frame*|form*|space*|coordinate*|representation*|version*"],
       "pre_rope future_rope polar", "rotate apply_rope rope_angles rotate_half apply angles cos sin atan2 arctan2 "
       "angle polar view_as_complex view_as_real",
       "the rotary embedding applied or undone (view.rotate, the layer's rope, or sines and cosines)"),
    _c("random selection",
       ["random selection|eviction|subset|sampling|share|choice|scores", "randomly chosen|selected|evicted|kept|"
        "sampled|dropped", "gumbel", "stochastic*", "at random", "sampl* ~ token*|key*"],
       "random", RANDOM, "random draws"),
    _c("redundancy",
       ["redundan*", "cosine similarit*", "duplicat*", "near duplicat*", "key similarit*", "similar keys",
        "diversit*"],
       "key_similarity mean_key leverage hashing", "cosine_similarity normalize norm cdist",
       "a similarity between keys"),
    # a choice of queries: strict where the code never reads a query (``structure="queries"``: the data flow's
    # ``Computation.reads``; keys handed to ``view.attention`` as probes are keys, not queries)
    _c("a query window",
       ["observation window*", "query window*", "last # queries", "window of ~ last|recent queries",
        "recent queries", "last # prompt queries"],
       "window_queries last_query question_queries", "", "attention from a window of recent queries",
       structure="queries"),
    # the question's queries (board A hands them over): words that name the queries or the attention of the
    # question, never its tokens (a method may keep the question's tokens by their positions alone)
    _c("the question's queries",
       ["question ~ quer*", "quer* of|from|in ~ question*", "question attention", "question conditioned",
        "conditioned on ~ question*", "attention of|from|paid by ~ question*", "question to context attention"],
       "question_queries window_queries last_query all_queries", "", "the question's queries (view.queries) in "
       "the score", structure="queries"),
    _c("recency",
       ["recency", "most recent tokens", "recent tokens", "sliding window*", "recent window*", "local window*"],
       "recent", "", "a slice of the most recent tokens"),
    # a selection in stages: a shortlist re-ranked, a first pass filtered by a second. Strict only where the code
    # ranks by one score and masks by no data-dependent threshold (``structure="staged"``, see ``structures``): a
    # single top-k with sinks and a window forced in is one stage whatever the words say
    _c("a staged selection (shortlist, then re-rank)",
       ["re rank*|scor*|select*|evaluat* ~ shortlist*|candidate*", "rerank*|rescor* ~ shortlist*|candidate*", "two stage*|pass*|round*", "second|2nd stage|pass|round", "coarse to fine",
        "shortlist*", "short list*", "candidate* ~ re rank*|scor*|select*", "candidate* ~ rerank*|rescor*|refin*|narrow*", "refin* ~ candidate*|shortlist*"],
       "coarse_to_fine chunked_refill staged", "", "a second ranking over the first one's candidates (or a data-dependent "
       "threshold before the ranking)", structure="staged"),
    _c("per-layer budgets",
       ["per layer budget*", "layer wise budget*", "layerwise budget*",
        "budget* that|which vary|varies|differ|differs|fall|falls|shrink|shrinks|grow|grows by|across|with ~ "
        "layer*|depth", "budget* vary|varies|differ|differs|fall|falls|shrink|shrinks|grow|grows by|across|with ~ "
        "layer*|depth", "fewer tokens in deeper layers", "deeper layers keep fewer",
        "different|unequal|varying|variable|uneven number*|count*|share*|budget*|rate*|ratio* per|across|between|among ~ "
        "layer*", "variable|adaptive|uneven|nonuniform compression rate*|ratio*|budget* per|across|for ~ layer*",
        "layers ~ keep|retain|hold|get|receive ~ different|unequal|"
        "varying|more|fewer", "depth tapered|taper*|pyramid* ~ budget*", "budget* ~ taper*|proportional to ~ depth|layer*",
        "allocat*|assign*|give*|gives ~ layer* ~ budget*|share*",
        "distribut*|spread*|split*|allocat*|divid*|apportion* ~ budget*|cache ~ along|over|across|down ~ depth|layers|"
        "stack", "layer* gets|get|receives|receive|keeps|keep ~ # times ~ mean|average budget*",
        "layer* gets|get|receives|receive|keeps|keep ~ twice|half ~ mean|average budget*",
        "layer budget hook*", "layer* ~~ get|gets|receive|receives|keep|keeps ~ smaller|larger|bigger|lower|higher|"
        "tighter|looser ~ cap*|budget*|cache*", "smaller|larger|bigger|tighter|looser cap*|budget* for|in ~ layer*"],
       "layer_budget pyramid", "", "a budget computed per layer", budget=True),
    _c("per-head budgets",
       ["head wise budget*", "headwise budget*", "per head budget*",
        "budget* that|which vary|varies|differ|differs by|across heads",
        "budget* vary|varies|differ|differs by|across heads",
        "adaptive|allocat* ~ per|across|over|between heads", "adaptive|allocat* ~ per|across|over|between kv heads",
        "different|unequal|varying|variable|uneven number*|count*|share*|budget*|rate*|ratio* per|across|between|among ~ "
        "head*", "variable|adaptive|uneven|nonuniform compression rate*|ratio*|budget* per|across|for ~ head*",
        "rank*|select*|chosen|compet* jointly|together across|over|among ~ head*",
        "heads ~ keep|retain|hold|get|receive ~ different|unequal|"
        "varying|more|fewer"],
       "head_budget", "", "a budget computed per head", budget=True),
    # one selection for the whole layer, every KV head keeping the same positions (TOVA's, GemFilter's): the scores
    # reduced over the heads. Only words that name every head of the layer or the layer's level: the query heads of
    # one KV head share its selection in any method (the group)
    _c("one selection shared by the layer's heads",
       ["every|all head*|heads ~ keep*|retain*|share*|use* ~ same|single|common|shared position*|token*|entr*|"
        "indices|selection*|set*|topk", "every|all kv head*|heads ~ keep*|retain*|share*|use* ~ same|single|common|"
        "shared position*|token*|entr*|indices|selection*|set*|topk",
        "same position*|token*|indices|selection*|set* for|across|in every|all head*",
        "same position*|token*|indices|selection*|set* for|across|in every|all kv head*",
        "at the level of the layer", "layer level selection*|ranking*|decision*", "layer level top k",
        "one|single selection*|ranking*|topk per|for layer", "one|single top k per|for layer",
        "one|single selection*|ranking*|topk for each|the layer",
        # the set named first, who shares it after ("a single set of pages is chosen per layer, shared by all KV
        # heads"); a budget shared by the heads is the budgets' concept, not a set of positions
        "position*|token*|indices|selection*|set|sets|page*|block*|chunk* ~ shared by|across|among every|all head*",
        "position*|token*|indices|selection*|set|sets|page*|block*|chunk* ~ shared by|across|among every|all kv head*",
        "per|each|every|whole|the layer shared by|across|among every|all head*",
        "per|each|every|whole|the layer shared by|across|among every|all kv head*"],
       "head_average layer_reuse", "expand expand_as repeat repeat_interleave broadcast_to tile same_for_all_heads",
       "the scores reduced over the layer's heads (one ranking for every head)", structure="positional"),
    # the score weighted by (gated by, multiplied by) the attention the queries pay each token: strict only where the
    # code reads no query at all (``structure="queries"``: the view's queries or attention read anywhere could compute
    # it), so a method that computes attention some other way is never contradicted by the words
    _c("attention weighting",
       ["attention ~ pay|pays|paid|paying|receive|receives|received|receiving ~ each|the|a|every token*",
        "attention each|the|a|every token receive|receives|gets",
        "multipl*|weight*|gat*|scal*|modulat* by ~ attention", "attention weighted|gated|scaled"],
       "attention max_attention attention_threshold attention_variance attention_propagation attention_output "
       "attention_coverage count_normalised antidiagonal exp_logit channel_selection last_attended "
       "recurrence_interval query_votes copy_score query_statistics query_svd future_rope",
       "attention", "attention computed from the queries (the view's attention, or a softmax of query-key products)",
       structure="queries"),
]
BY_LABEL = {c.label: c for c in CONCEPTS}

# A budget concept stated as varying (across heads or layers), not only applied per head or layer: "a per-layer budget,
# no global threshold" applies one budget in each layer, "per-head budgets proportional to entropy" shares it out
_VARIES = re.compile(r"(?<![a-z0-9])(?:var(?:y|ies|ying|iable)|differ\w*|adaptive\w*|allocat\w*|uneven\w*|unequal\w*|"
                     r"non ?uniform\w*|dynamic\w*|proportion\w*|jointly|together|more|fewer|larger|smaller|"
                     r"redistribut\w*|rebalanc\w*|shares? out|shared out|shrink\w*|grows?|falls?|decreas\w*|"
                     r"increas\w*|not (?:split |spread |shared |divided )?(?:even\w*|equal\w*|uniform\w*)|"
                     r"gives? up|giving up|cedes?|ceding|lends?|lending|borrows?|borrowing|transfers?|"
                     r"depends? on|follows? how|less|taper\w*|profile|peak\w*|twice|times the (?:mean|average))(?![a-z0-9])")


def states_variation(sentence: str) -> bool:
    """Whether a sentence stating a budget concept says the budget varies (across heads or layers): what a measured
    allocation can contradict."""
    return bool(_VARIES.search(normalise(sentence)))


# --- what the description says the method does NOT read (a denial), against a score that reads it ---------------

# Features of ``evidence.computation`` that make a score depend on the queries: attention (computed, or partial logits
# of selected channels) and what is read off it, and statistics of the queries. The choice of queries (last,
# window, question, all) counts only where the code computes with them (a line of its own, not the class attribute
# the harness reads to hand them over).
ATTENTION_FEATURES = frozenset({
    "attention", "max_attention", "attention_threshold", "attention_variance", "attention_propagation",
    "attention_output", "attention_coverage", "count_normalised", "antidiagonal", "exp_logit", "channel_selection",
    "query_votes", "copy_score",
    "last_attended", "recurrence_interval"})
QUERY_FEATURES = ATTENTION_FEATURES | frozenset({"query_statistics", "query_svd", "future_rope"})
QUERY_CHOICE = frozenset({"last_query", "window_queries", "question_queries", "all_queries"})

_FILLER = r"(?:(?:any|the|its|their|all|of|a)\s+)?"
_Q = r"quer(?:y|ies)(?:\s+vectors?)?"
_A = r"attention(?:\s+(?:scores?|weights?|maps?|matri(?:x|ces)|probabilit(?:y|ies)|logits?|computation))?"
_NOT_VERB = (r"(?:(?:does|do|did)\s+not|never)\s+(?:use|uses|read|reads|need|needs|touch|touches|look\s+at|looks\s+at|"
             r"depend\s+on|depends\s+on|consult|consults|require|requires|compute|computes|materiali[sz]es?)\s+")
_PASSIVE = r"\s+(?:are|is)\s+(?:never|not)\s+(?:used|read|needed|computed|touched|consulted|materiali[sz]ed|required)\b"


def _denial_patterns(noun: str, free: str) -> tuple[re.Pattern[str], ...]:
    # matched on normalised text (lower case, punctuation as spaces): "query-free" reads "query free"
    return tuple(re.compile(r"(?<![a-z0-9])" + p + r"(?![a-z0-9])") for p in (
        rf"{free}\s+(?:free|less)", rf"free\s+of\s+{_FILLER}{noun}", rf"(?:no|without|nor|zero)\s+{_FILLER}{noun}",
        rf"{_NOT_VERB}{_FILLER}{noun}", rf"ignor\w*\s+{_FILLER}{noun}", rf"independent\s+of\s+{_FILLER}{noun}",
        rf"{noun}{_PASSIVE}"))


def _denial(label: str, patterns: tuple[re.Pattern[str], ...], shows: frozenset[str], needs: str) -> Concept:
    return Concept(label, patterns, shows, frozenset(), frozenset(), needs)


DENIALS: list[Concept] = [
    _denial("no queries", _denial_patterns(_Q, r"query"), QUERY_FEATURES, "a score that reads no query"),
    _denial("no attention", _denial_patterns(_A, r"attention") + (re.compile(r"(?<![a-z0-9])no\s+softmax(?![a-z0-9])"),),
            ATTENTION_FEATURES, "a score that computes no attention"),
]


def denials(sentence: str) -> list[Mention]:
    """The denials of ``DENIALS`` a sentence makes of the queries or of attention as a whole: "query-free", "no
    queries", "attention-free", "without attention", "does not compute attention", "the queries are never read". Not
    one: a qualified part ("no question queries", "without the future queries": other queries may still be read),
    "query-agnostic" / "query-independent" (independent of the user's question, not of the query vectors), "without
    attention to" (an idiom); a double negation is ``stated``'s to refuse."""
    out = []
    for m in mentions(sentence, DENIALS):
        if m.concept.label == "no attention" and re.match(r"\s*(?:to|paid)\b", sentence[m.end:], re.I):
            continue
        if _SCOPED.match(sentence[m.end:]):
            continue  # "no attention over the whole prompt", "attention-free at decode time": a part, not the score
        out.append(m)
    return out


# a denial whose scope the next words restrict (where, when, over what): it denies a part only
_SCOPED = re.compile(r"\s*(?:over|across|from|of|on|beyond|outside|to|for|at(?!\s+all\b)|in|during|between|except|other|than|"
                     r"but|until|before|after|once|inside|within|when|while|if|unless|per|apart|besides)\b", re.I)


# --- normalisation and matching -----------------------------------------------------------------------------

def normalise(text: str) -> str:
    """Lower case, accents dropped, every non-alphanumeric character a space: same length, same offsets."""
    out = []
    for ch in text:
        base = unicodedata.normalize("NFKD", ch)[:1].lower() if ch else ch
        out.append(base if base.isascii() and base.isalnum() else " ")
    return "".join(out)


@dataclass(frozen=True)
class Mention:
    concept: Concept
    start: int
    end: int
    text: str


# a norm written as a formula (||v_i||, ‖k‖, |v|_2): the punctuation that says "norm" is what normalising drops
NORM_NOTATION = re.compile(r"(?:\|\||\u2016)\s*([vk])(?:_\{?[a-z0-9]{1,3}\}?)?\s*(?:\|\||\u2016)(?:_?[12])?")
NORM_CONCEPTS = {"v": "value_norm", "k": "key_norm"}


def mentions(sentence: str, concepts: list[Concept] | None = None) -> list[Mention]:
    """Every concept phrasing in ``sentence``, in concept order; a span taken by one concept is not read again.
    A key or value norm written as a formula (``||v_i||``) is a mention of the norms' concept."""
    norm = normalise(sentence)
    taken: list[tuple[int, int]] = []
    out: list[Mention] = []
    pool = concepts if concepts is not None else CONCEPTS
    for c in pool:
        for pat in c.phrases:
            for m in pat.finditer(norm):
                if any(m.start() < e and s < m.end() for s, e in taken):
                    continue
                taken.append((m.start(), m.end()))
                out.append(Mention(c, m.start(), m.end(), sentence[m.start():m.end()]))
    for m in NORM_NOTATION.finditer(sentence):
        concept = next((c for c in pool if c.shows == frozenset({NORM_CONCEPTS[m.group(1).lower()]})), None)
        if concept is not None and not any(m.start() < e and s < m.end() for s, e in taken):
            taken.append((m.start(), m.end()))
            out.append(Mention(concept, m.start(), m.end(), m.group(0)))
    return sorted(out, key=lambda m: m.start)


# --- stated as what this method does ----------------------------------------------------------------------

_CLAUSE = re.compile(r"[;:,()\u2014]|\s-\s|\bbut\b|\bwhile\b|\bwhereas\b|\balthough\b|\bthough\b", re.I)
NEGATED_BEFORE = re.compile(
    r"\b(no|not|never|without|nor|neither|none|instead of|rather than|unlike|avoid\w*|free of|does not|doesn't|"
    r"don't|do not|no need|needs? no|requires? no|uses? no|skip\w*|forgo\w*|dispens\w+ with|omit\w*|isn't|aren't|"
    r"cannot|can't|lacks?|nothing|replac\w*|drops?|dropped|removes?|removed|abandon\w*|beyond)\b", re.I)
NEGATED_AFTER = re.compile(
    r"^[\s-]*(?:free|less)\b|^\W*(?:[\w-]+\s+){0,4}?(?:is|are|was|were|be)\s+(?:not|never|neither|unnecessary|"
    r"unneeded|avoided|dropped|omitted|removed|skipped)\b|^\W*(?:[\w-]+\s+){0,3}?(?:plays?|has|have)\s+no\b", re.I)
BUDGET_NEGATED = re.compile(r"\b(same|fixed|uniform|equal|constant|identical)\b", re.I)
# what others did with a mechanism, said in the passive ("has been used", "was proposed"): one verb list for both
# the phrase before a mention (``OTHER_WORK``) and the mention as its subject (``_USED_BEFORE``)
_DONE = "used|proposed|applied|explored|studied|introduced|tried"
OTHER_WORK = re.compile(
    r"\b(?:prior|previous|existing|earlier|related|other|some|many|several|most|popular|standard|classic(?:al)?|"
    r"conventional|traditional|recent|known|published|competing|alternative)\s+(?:work|works|methods?|approaches|"
    r"papers?|systems|techniques|schemes|baselines?|designs|evictors|policies)\b|\bet al\b|"
    r"\bthe literature\b|\bbaselines?\b|\[\d+\]|\((?:[^()]*,\s*)?(?:19|20)\d\d\)|\barxiv\b|\bmethods (?:that|which)\b"
    r"|\bapproaches (?:that|which)\b|\bsystems (?:that|which)\b"
    # "entropy has been used before for budget allocation": what others did, said in the passive
    r"|\b(?:has|have|had) been (?:\w+ )?(?:" + _DONE + r"|done)\b", re.I)
CONTRAST = re.compile(r"\b(unlike|in contrast|contrary to|as opposed to|compared (?:to|with)|versus|vs|whereas"
                      r"|than)\b", re.I)
OURS = re.compile(r"\b(we|our|ours|us|this method|this work|the method|here|itself)\b", re.I)
# hypotheticals and future work
HYPOTHETICAL = re.compile(r"\b(could|might|would|may|should|future|plan(?:s|ned)? to|intend\w*|hope\w*|left for|"
                          r"next step|extension|later version|left for later|later work|in principle|one can|wish\w*|TODO|not yet)\b",
                          re.I)
# goals, interpretations, analogies, observations: the concept is not what the code is said to compute, until a
# connector introduces the means ("approximates the entropy BY the maximum")
INTERPRETIVE = re.compile(
    r"\b(prox(?:y|ies)|surrogates?|stand-?ins?|approximat\w*|estimat\w*|interpret\w*|seen as|viewed? as|read as|"
    r"thought of as|think of|analog\w*|akin|reminiscent|resembl\w*|like an?|in the spirit|motivat\w*|inspir\w*|"
    r"intuition\w*|equivalent|amounts? to|corresponds? to|similar to|mimic\w*|imitat\w*|emulat\w*|plays? the role|"
    r"serves? as|acts? as|to (?:minimi[sz]e|maximi[sz]e|reduce|preserve|capture|approximate|match|bound|mirror|"
    r"reflect|track)|aims?|goals?|objectives?|so that|in order to|hypothes\w*|conjectur\w*|sense of|flavou?r of|"
    r"kind of|sort of|cheap(?:er)? version|cheaper|because|since|given that|due to|tends? to|typically|usually|"
    r"often|generally|empirically|observ\w*|well-known|is known|are known|resembles|mirrors|reflects)\b", re.I)
# the mention as the subject of what others did: "entropy has been used before", "clustering was proposed by"
_USED_BEFORE = re.compile(r"\W*(?:[\w-]+\s+){0,3}?(?:has|have|had|was|were)\s+(?:been\s+)?(?:\w+\s+)?(?:" + _DONE +
                          r")\s+(?:before|previously|earlier|already|by|in\s+(?:prior|previous|earlier|related)|"
                          r"elsewhere)\b", re.I)
_HARD = re.compile(r"[;:\u2014]|\s-\s")
CONNECTOR = re.compile(r"\b(by|with|using|via|through)\b", re.I)


def _clause(sentence: str, start: int, end: int) -> tuple[str, str]:
    """(the clause's text before the mention, after it)."""
    lo, hi = 0, len(sentence)
    for m in _CLAUSE.finditer(sentence):
        if m.end() <= start:
            lo = m.end()
        elif m.start() >= end:
            hi = m.start()
            break
    return sentence[lo:start], sentence[end:hi]


def _after_cue(pattern: re.Pattern[str], before: str) -> bool:
    """A cue in ``before`` whose scope reaches the mention: no connector (by, with, using...) between them."""
    cue = None
    for m in pattern.finditer(before):
        cue = m
    return cue is not None and not CONNECTOR.search(before[cue.end():])


def _names_of_others() -> list[re.Pattern[str]]:
    """The index's paper names, less those made of ordinary words ("Random", "Expected Attention"): as phrases
    they are no citation."""
    from reviewbench.priorart import generic_name, load_index

    return _other_patterns(tuple(p.short_name for p in load_index().papers if not generic_name(p.short_name)))


@lru_cache(maxsize=4)
def _other_patterns(names: tuple[str, ...]) -> list[re.Pattern[str]]:
    from reviewbench.priorart import name_pattern

    # names not made of ordinary words: case-blind; a name of three characters or fewer only as written, in capitals
    # ("DMS learns a gate", "H2O accumulates": an acronym; "cam" or "nsa" in prose is none)
    return [name_pattern(n) if len(n) > 3 else re.compile(rf"(?<![A-Za-z0-9]){re.escape(n)}(?![A-Za-z0-9])")
            for n in names if len(n) > 3 or n[:1].isupper()]


# a negation that a list's later items share ("we do not learn weights, cluster keys, or merge tokens")
_LIST_NEGATION = re.compile(r"\b(?:not|no|never|nor|neither|without|none|nothing|cannot|can't|don't|doesn't|"
                            r"isn't|aren't)\b", re.I)
_LIST_STOP = re.compile(r"[.;:()\u2014]|\s-\s|\bbut\b|\bwhile\b|\bwhereas\b|\balthough\b|\bthough\b|\binstead\b",
                        re.I)
# an item of a list that has a subject of its own is a clause, not one more object of the first item's verb
_OWN_SUBJECT = re.compile(r"\b(?:we|it|they|our|this method|the method|which|that|is|are|was|were)\b", re.I)
# a parameter set to nothing ("`query_window = 0`"): the mechanism it names is switched off
_SET_TO_NONE = re.compile(r"^[`'\"\s]*=\s*(?:0|0\.0|None|False)\b")


def _in_negated_list(sentence: str, start: int, end: int) -> bool:
    """The mention is a later item of a comma-separated list whose first item is negated, the list closed by
    "or", "nor" or "and", each item a short phrase without a subject of its own: the negation reaches it."""
    head = sentence[:start]
    hard = max((m.end() for m in _LIST_STOP.finditer(head)), default=0)
    pieces = head[hard:].split(",")
    if len(pieces) < 2:
        return False
    first, items = pieces[0], pieces[1:]
    if not _after_cue(_LIST_NEGATION, first):
        return False
    tail = sentence[end:]
    stop = _LIST_STOP.search(tail)
    tail = tail[:stop.start()] if stop else tail
    rest = tail.split(",")
    own = items[-1] + sentence[start:end] + rest[0]
    if any(_OWN_SUBJECT.search(p) or len(p.split()) > 9 for p in [*items[:-1], own]):
        return False
    return bool(re.match(r"\s*(?:or|nor|and)\b", items[-1], re.I) or any(
        re.match(r"\s*(?:or|nor|and)\b", p, re.I) for p in rest[1:]))


_MODAL = re.compile(r"\b(?:would|could|might)\b", re.I)
_DETERMINER_ONLY = re.compile(r"^\W*(?:(?:a|an|the|such|some|any)\s+)?$", re.I)


def _hypothetical_subject(sentence: str, start: int, end: int) -> bool:
    """The mention opens its part of the sentence (a determiner at most before it) and that part's verb is a
    modal, with nothing of this method's between them: "A distilled gate that predicts the score, as X does, would
    remove the pass" names what could be done, not what is."""
    seg = max((m.end() for m in _HARD.finditer(sentence[:start])), default=0)
    if not _DETERMINER_ONLY.match(sentence[seg:start]):
        return False
    stop = _HARD.search(sentence, end)
    rest = sentence[end:stop.start() if stop else len(sentence)]
    modal = _MODAL.search(rest)
    return modal is not None and not OURS.search(rest[:modal.start()])


def stated(sentence: str, mention: Mention, own_names: tuple[str, ...] = ()) -> tuple[bool, str]:
    """Whether ``mention`` states its concept as what this method does: (stated, why not)."""
    before, after = _clause(sentence, mention.start, mention.end)
    head = sentence[:mention.start]
    if NEGATED_BEFORE.search(before) and _after_cue(NEGATED_BEFORE, before) or NEGATED_AFTER.search(after):
        return False, "negated"
    if _in_negated_list(sentence, mention.start, mention.end) or _SET_TO_NONE.match(sentence[mention.end:]):
        return False, "negated"
    if mention.concept.budget and BUDGET_NEGATED.search(before):
        return False, "negated"
    if HYPOTHETICAL.search(before + " " + after) or re.match(r"\s*(future|in future|a natural|one could|next)\b", sentence, re.I):
        return False, "hypothetical or future work"
    if _hypothetical_subject(sentence, mention.start, mention.end):
        return False, "hypothetical or future work"
    if _after_cue(INTERPRETIVE, before):
        return False, "a goal, an interpretation or an observation"
    # another work's: named (an index paper, prior methods, a citation) or contrasted before it, with nothing
    # of this method's ("we", "our") in between
    # (within the part of the sentence after its last semicolon, colon or dash: "X does A; we do B")
    seg = max((m.end() for m in _HARD.finditer(head)), default=0)
    part = head[seg:]
    others = [m.end() for p in _names_of_others() for m in p.finditer(part)
              if not any(m.group(0).lower() == o.lower() for o in own_names)]
    others += [m.end() for m in OTHER_WORK.finditer(part)] + [m.end() for m in CONTRAST.finditer(part)]
    if others and not OURS.search(part[max(others):]):
        return False, "another work's mechanism, or a contrast"
    if _USED_BEFORE.match(after):
        return False, "another work's mechanism, or a contrast"  # "entropy has been used before for ..."
    return True, ""


# --- the shapes of code that could compute a concept ---------------------------------------------------------

_HOOK_SKIP = frozenset({"__init__", "setup"})
# calls that change a container or tensor in place: on the instance or a module name, memory across calls
_MUTATORS = CONTAINER_MUTATORS | TENSOR_MUTATORS


def _sweeps(tree: ast.Module) -> bool:
    """A search over a count: a ``while`` loop (split until a test stops), a loop variable handed whole to a
    function of the module (``for k in range(8, 33): fit(x, k)``), or one function of the module called with two
    different literal counts. A loop over the heads indexes with its variable and is none."""
    own = {f.name for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    literal_calls: dict[str, set[object]] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.While):
            return True
        if isinstance(n, (ast.For, ast.AsyncFor)) and isinstance(n.target, ast.Name):
            var = n.target.id
            for c in ast.walk(n):
                if isinstance(c, ast.Call) and callee(c.func)[0] in own and any(
                        isinstance(a, ast.Name) and a.id == var for a in [*c.args, *(k.value for k in c.keywords)]):
                    return True
        if isinstance(n, ast.Call) and (fname := callee(n.func)[0]) in own:
            for a in n.args:
                if isinstance(a, ast.Constant) and isinstance(a.value, int) and not isinstance(a.value, bool):
                    literal_calls.setdefault(str(fname), set()).add(a.value)
    return any(len(v) >= 2 for v in literal_calls.values())


def structures(source: str) -> set[str]:
    """``state`` (a value carried across calls: view.remember/recall/state, or self attributes written outside
    __init__/setup), ``recurrence`` (a loop whose body updates a name from itself), ``loop`` (such a loop with a
    matrix product in it: an iterated propagation, a Lloyd or Sinkhorn step), ``shift`` (a tensor minus a shifted
    copy of itself: x[1:] - x[:-1], x - roll(x)), ``sweep`` (a search over a count: ``_sweeps``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    out: set[str] = set()
    module_names = {t.id for st in tree.body if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                    for t in (st.targets if isinstance(st, ast.Assign) else [st.target]) if isinstance(t, ast.Name)}

    def kept_across_calls(e: ast.expr) -> bool:
        """A place that outlives one call: an attribute of the module's instance or a name of the module."""
        while isinstance(e, ast.Subscript):
            e = e.value
        return isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self" or \
            isinstance(e, ast.Name) and e.id in module_names

    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if _centred_product(fn):
            out.add("centred")
        for n in ast.walk(fn):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("remember", "recall"):
                out.add("state")
            if isinstance(n, ast.Global) or fn.name not in _HOOK_SKIP and isinstance(n, ast.Call) and isinstance(
                    n.func, ast.Attribute) and n.func.attr in _MUTATORS and kept_across_calls(n.func.value):
                out.add("state")  # self.trail.append(keys), MEMO.update(...), global: memory across calls
            if fn.name not in _HOOK_SKIP and isinstance(n, (ast.Assign, ast.AugAssign)) and any(
                    isinstance(t, ast.Subscript) and kept_across_calls(t)
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])):
                out.add("state")  # MEMO[layer] = keys
            if isinstance(n, ast.Attribute) and n.attr == "state":
                out.add("state")
            if fn.name not in _HOOK_SKIP and isinstance(n, (ast.Assign, ast.AugAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    base = t.value if isinstance(t, ast.Subscript) else t
                    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id == "self":
                        out.add("state")
            if isinstance(n, (ast.For, ast.While)):
                updates = False
                for st in ast.walk(n):
                    if isinstance(st, ast.AugAssign):
                        updates = True
                    elif isinstance(st, ast.Assign):
                        tgt = {t.id for t in st.targets if isinstance(t, ast.Name)}
                        updates = updates or bool(tgt & {x.id for x in ast.walk(st.value) if isinstance(x, ast.Name)})
                if updates:
                    out.add("recurrence")
                    if any(isinstance(x, ast.BinOp) and isinstance(x.op, ast.MatMult) or isinstance(x, ast.Call)
                           and isinstance(x.func, (ast.Attribute, ast.Name)) and (x.func.attr if isinstance(
                               x.func, ast.Attribute) else x.func.id) in ("matmul", "bmm", "mm", "mv", "einsum")
                           for x in ast.walk(n)):
                        out.add("loop")
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub):
                def root(e: ast.expr) -> str | None:
                    while isinstance(e, (ast.Subscript, ast.Attribute)):
                        e = e.value
                    return e.id if isinstance(e, ast.Name) else None
                l, r = n.left, n.right
                if isinstance(l, ast.Subscript) and isinstance(r, ast.Subscript) and root(l) and root(l) == root(r) \
                        and ast.dump(l.slice) != ast.dump(r.slice):
                    out.add("shift")
                if isinstance(r, ast.Call) and isinstance(r.func, (ast.Attribute, ast.Name)) and \
                        (r.func.attr if isinstance(r.func, ast.Attribute) else r.func.id) == "roll":
                    out.add("shift")
    if _sweeps(tree):
        out.add("sweep")
    if _staged(tree):
        out.add("staged")
    if _gram(tree):
        out.add("gram")
    return out


def _gram(tree: ast.AST) -> bool:
    """``x.T @ x`` (``x.mT @ x``, ``x.transpose(-2, -1) @ x``, ``matmul(x.T, x)``): a matrix's channels against
    themselves over its rows, the (uncentred) covariance or second-moment matrix."""
    def transposed_name(e: ast.expr) -> str | None:
        if isinstance(e, ast.Attribute) and e.attr in ("T", "mT") and isinstance(e.value, ast.Name):
            return e.value.id
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr in ("transpose", "t") and \
                isinstance(e.func.value, ast.Name):
            return e.func.value.id
        return None

    for n in ast.walk(tree):
        pair: tuple[ast.expr, ast.expr] | None = None
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            pair = (n.left, n.right)
        elif isinstance(n, ast.Call) and _callname(n) in ("matmul", "mm", "bmm", "dot") and len(n.args) == 2:
            pair = (n.args[0], n.args[1])
        if pair and isinstance(pair[1], ast.Name) and transposed_name(pair[0]) == pair[1].id:
            return True
    return False


# calls that rank or order a tensor (their subject: the receiver, or the first argument of a function form)
RANKINGS = frozenset({"topk", "kthvalue", "argsort", "sort", "argmax", "argmin", "argpartition", "msort", "quantile",
                      "nanquantile", "from_topk", "nlargest", "nsmallest", "sorted", "median", "partition"})
_POSITIONAL = frozenset({"positions", "arange", "valid", "valid_mask", "shape", "size", "budget", "len", "numel"})


def _staged(tree: ast.AST) -> bool:
    """Whether the code selects in stages: a ranking of scores that depend on an earlier ranking's output (a
    shortlist gathered, or masked, by what the first ranking picked), or scores masked by a comparison with a
    data-dependent threshold before a ranking. Putting the kept indices in order is no second stage, nor is a
    comparison of positions or with a constant. Dependence is read through assignments, module-wide (helpers
    included): a name depends on every name its assigned values read."""
    deps: dict[str, set[str]] = {}
    ranked: set[str] = set()  # names assigned a ranking's output
    thresholded: set[str] = set()  # names assigned a data-dependent comparison

    def data_compare(n: ast.Compare) -> bool:
        if len(n.ops) != 1 or not isinstance(n.ops[0], (ast.Gt, ast.GtE, ast.Lt, ast.LtE)):
            return False
        sides = [n.left, n.comparators[0]]
        if any(isinstance(x, ast.Constant) or isinstance(x, ast.UnaryOp) and isinstance(x.operand, ast.Constant)
               for x in sides):
            return False
        names = {x.attr if isinstance(x, ast.Attribute) else x.id if isinstance(x, ast.Name) else ""
                 for side in sides for x in ast.walk(side)}
        return not names & _POSITIONAL and any(isinstance(x, (ast.Call, ast.Subscript, ast.Attribute, ast.BinOp))
                                               for x in sides)

    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            names = {x.id for t in targets for x in ast.walk(t) if isinstance(x, ast.Name)}
            reads = {x.id for x in ast.walk(n.value) if isinstance(x, ast.Name)}
            is_rank = any(isinstance(c, ast.Call) and _callname(c) in RANKINGS for c in ast.walk(n.value))
            is_cmp = any(isinstance(c, ast.Compare) and data_compare(c) for c in ast.walk(n.value))
            # keep[idx] = True: what a subscript target holds depends on where it is written too
            reads |= {x.id for t in targets if isinstance(t, ast.Subscript) for x in ast.walk(t.slice)
                      if isinstance(x, ast.Name)}
            for t in names:
                deps.setdefault(t, set()).update(reads)
                if is_rank:
                    ranked.add(t)
                if is_cmp:
                    thresholded.add(t)
        elif isinstance(n, (ast.For, ast.comprehension)):  # for i in order.tolist(): i is read off order
            reads = {x.id for x in ast.walk(n.iter) if isinstance(x, ast.Name)}
            for t in {x.id for x in ast.walk(n.target) if isinstance(x, ast.Name)}:
                deps.setdefault(t, set()).update(reads)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MUTATORS and \
                isinstance(n.func.value, ast.Name):  # first.append(i), mask.index_fill_(0, idx, True)
            deps.setdefault(n.func.value.id, set()).update(
                x.id for a in [*n.args, *(k.value for k in n.keywords)] for x in ast.walk(a) if isinstance(x, ast.Name))

    def closure(names: set[str]) -> set[str]:
        seen, todo = set(), list(names)
        while todo:
            x = todo.pop()
            if x in seen:
                continue
            seen.add(x)
            todo.extend(deps.get(x, ()))
        return seen

    def subject(c: ast.Call) -> ast.expr | None:
        if isinstance(c.func, ast.Attribute) and _root(c.func.value) not in (None, "torch", "np", "numpy", "heapq",
                                                                            "Keep"):
            return c.func.value
        return c.args[0] if c.args else None

    for n in ast.walk(tree):
        if not (isinstance(n, ast.Call) and _callname(n) in RANKINGS):
            continue
        subj = subject(n)
        if subj is None or _root(subj) in ranked and isinstance(subj, (ast.Name, ast.Subscript, ast.Attribute)):
            continue  # the kept indices put in order
        inner = {x.id for x in ast.walk(subj) if isinstance(x, ast.Name)}
        inside = [c for c in ast.walk(subj) if c is not subj]
        if any(isinstance(c, ast.Call) and _callname(c) in RANKINGS for c in inside) or \
                any(isinstance(c, ast.Compare) and data_compare(c) for c in ast.walk(subj)):
            return True
        if (ranked | thresholded) & closure(inner):
            return True
    return False


def _callname(e: ast.expr) -> str | None:
    if isinstance(e, ast.Call):
        f = e.func
        return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return None


def _root(e: ast.expr) -> str | None:
    """The name a value is read from, through subscripts, attributes and method calls (c.T, c.transpose(1, 2))."""
    while True:
        if isinstance(e, (ast.Subscript, ast.Attribute)):
            e = e.value
        elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute):
            e = e.func.value
        else:
            return e.id if isinstance(e, ast.Name) else None


def _centred_product(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``c = x - x.mean(...)`` (a value minus its own mean) multiplied by a centred value (``einsum(.., c, c)``,
    ``c.T @ c``, ``c * c``, ``c ** 2``): squared deviations from a mean, i.e. a variance or a covariance matrix."""
    centred: set[str] = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.BinOp) and isinstance(n.value.op, ast.Sub) and \
                _callname(n.value.right) == "mean" and _root(n.value.left) is not None:
            centred |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    if not centred:
        return False

    def is_c(e: ast.expr) -> bool:
        return _root(e) in centred

    for n in ast.walk(fn):
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.MatMult, ast.Mult)) and is_c(n.left) and is_c(n.right):
            return True
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow) and is_c(n.left) and \
                isinstance(n.right, ast.Constant) and n.right.value == 2:
            return True
        if isinstance(n, ast.Call) and (_callname(n) or "") in ("einsum", "matmul", "bmm", "mm") and \
                sum(is_c(a) for a in n.args) >= 2:
            return True
    return False


# --- what a paper's own text states (credit coverage) --------------------------------------------------------

# Phrasings of the features an index entry's prose states (beyond the concepts above): the words papers use for
# the scoring operations the reader finds. A feature is implied when one of these is stated in the entry's key
# idea, keywords or title (the concepts' ``shows`` are alternatives, too loose to imply any one feature).
FEATURE_PHRASES: dict[str, list[str]] = {
    "attention": ["attention*", "attended", "attends"],
    "last_query": ["last|final|newest|current token*|query", "last prompt token*", "last token s attention"],
    "window_queries": ["observation window*", "recent queries|tokens attention", "window of ~ queries",
                       "last # queries", "recent tokens attention"],
    "head_average": ["averaged|average|mean over|across ~ heads", "head averaged", "all heads of the layer",
                     "one token set per layer", "shared by the heads", "layer wise policy"],
    "pooling": ["pool*", "smooth*", "max pool*"],
    "accumulate": ["accumulat*", "cumulative", "heavy hitter*", "summed over ~ queries|steps"],
    "layer_budget": ["across layers", "per layer", "layer wise", "layerwise", "each layer", "deeper layers",
                     "layer budget*", "depth"],
    "pyramid": ["pyramid*", "funnel*", "progressive* ~ prun*|shrink*|drop*|evict*|reduc*", "progressive",
                "fewer tokens in deeper layers", "deeper layers ~ fewer|less", "decreas* with depth|layer*",
                "layer wise shrinking", "shrink* ~ layers|depth"],
    "head_budget": ["head wise budget*|allocation*", "across heads", "per head budget*", "adaptive budget*"],
    "sinks": ["sink*", "initial tokens", "first tokens", "start tokens"],
    "recent": ["recent window*|tokens", "sliding window*", "local window*", "recency"],
    "key_norm": ["key norm*", "norm* of ~ key*", "k norm*", "l2 norm*"],
    "value_norm": ["value norm*", "norm* of ~ value*"],
    "max_attention": ["max* attention", "maximum over ~ queries"],
    "key_clustering": ["k mean*|medoid*", "kmean*|kmedoid*", "centroid*", "cluster* ~ key*|quer*|tokens"],
    "block_keys": ["block*|chunk*|page* ~ mean of ~ key*", "block|chunk|page mean key*", "block|chunk|page key*",
                   "representative key*", "key summar*", "block|chunk|page summar*"],
}


@lru_cache(maxsize=1)
def _feature_patterns() -> dict[str, tuple[re.Pattern[str], ...]]:
    return {f: tuple(_phrase(p) for p in ps) for f, ps in FEATURE_PHRASES.items()}


def implied_features(text: str) -> set[str]:
    """The features a paper's own prose states (its index entry's title, key idea and keywords)."""
    norm = normalise(text)
    return {f for f, pats in _feature_patterns().items() if any(p.search(norm) for p in pats)}


# a case the method handles, not what its score reads ("without queries (boards B, C) it falls back to recency",
# "when no queries are given, ...")
CONDITION = re.compile(r"\b(?:when|whenever|if|unless|otherwise|in the absence|absent|in case|falls? back|fallback|"
                       r"fell back)\b", re.I)


def denied(sentence: str, mention: Mention, own_names: tuple[str, ...] = ()) -> tuple[bool, str]:
    """``stated`` for a denial: whether it says this method reads no queries / computes no attention. A sentence that
    states a condition or a fallback ("without queries it falls back to recency") describes a case, not the score.
    The other denials of the sentence are blanked first, so "no queries and no attention" is two denials, not a
    double negation."""
    if CONDITION.search(sentence):
        return False, "a condition or a fallback, not what the score reads"
    masked = list(sentence)
    for o in denials(sentence):
        if (o.start, o.end) != (mention.start, mention.end):
            masked[o.start:o.end] = " " * (o.end - o.start)
    return stated("".join(masked), mention, own_names)
