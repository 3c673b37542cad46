"""The features of a method (``computation``) and the names it calls (``called_names``)."""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from reviewbench.evidence.computation.flow import FeatureTagger
from reviewbench.evidence.computation.syntax import (Defs, callee, class_attrs, const_int, dead_statements,
                                                     fitted_literal, inline_divisor_norms, inline_expression_helpers,
                                                     inline_stateless_layers, split_moment_pairs,
                                                     is_true, parent_map, parse_source,
                                                     self_attr, smoothing_window,
                                                     self_attr_reads, state_tables)
from reviewbench.evidence.computation.vocabulary import CONTAINER_MUTATORS, FEATURE_WORDS, GENERIC, LEARNED_CALLS


@dataclass
class Computation:
    """The features a method's code shows, each with the line where it first shows."""

    features: dict[str, int] = field(default_factory=dict)
    # features only a tie-break computes (``score + 1e-9 * other``: FeatureTagger._tie_break), not the method's
    tie_breaks: dict[str, int] = field(default_factory=dict)
    # the features of each return path where a function returns on several (``return_paths``): (the line of the
    # return, the features of the method when that function takes that path), those that differ from the whole's
    paths: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    # the interface data the live code reads (K keys, V values, Q queries, P positions...: ``API_SOURCES``), with the
    # tie-breaks in: what a description may say the score reads and the code never touches (``evidence.stated``)
    reads: frozenset[str] = frozenset()

    def words(self) -> str:
        """The query: each feature's words, the distinctive ones twice (what few methods compute decides)."""
        out = []
        for k in sorted(self.features):
            if k in FEATURE_WORDS:
                out.extend([FEATURE_WORDS[k]] * (1 if k in GENERIC else 2))
        return " ".join(out)


def _prepared(source: str) -> ast.Module | None:
    """The module parsed, with the rewrites every reading starts from (helpers and layers inlined, moment pairs
    split), or None when it does not parse."""
    tree = parse_source(source)
    if tree is None:
        return None
    return split_moment_pairs(inline_stateless_layers(inline_divisor_norms(inline_expression_helpers(tree))))


def computation(source: str) -> Computation:
    """Features of an ``EvictionMethod`` module, from its interface use and data flow (names play no part).

    A sum read as "a score plus a tie-break" (``FeatureTagger._tie_break``) is read again with the tie-break taken
    out, so that what only feeds the tie-break (a norm computed on the line before) is no feature either; its
    features are ``tie_breaks``. Each return path of a function that returns on several is read on its own too
    (``paths``: a fallback or probe-detecting branch beside the ported rule)."""
    tree = _prepared(source)
    if tree is None:
        return Computation()
    found, ties, reads = _features_of(tree)
    tie_breaks: dict[str, int] = {}
    if ties:
        tree = _without_tie_breaks(tree, ties)
        kept, _, _ = _features_of(tree)
        tie_breaks = {k: v for k, v in found.items() if k not in kept}
        if "attention" in tie_breaks and not kept.keys() & QUERY_USES:
            # the queries the class asks for serve only the tie-break: which queries is no choice of the score's
            for k in [k for k in QUERY_CHOICE if kept.get(k) == 0 or k == "window_kept"]:
                if k in kept:
                    tie_breaks[k] = kept.pop(k)
        found = kept
    paths: list[tuple[int, dict[str, int]]] = []
    for line, pruned in return_paths(tree):
        f, t, _ = _features_of(pruned)
        if t:
            f, _, _ = _features_of(_without_tie_breaks(pruned, t))
        if f != found and (line, f) not in paths:
            paths.append((line, f))
    return Computation(features=found, tie_breaks=tie_breaks, paths=paths, reads=frozenset(reads))


def scored_features(source: str) -> dict[str, int]:
    """The features of the path a method falls through to when it is scored: each function whose early returns are
    all design guards (no queries, fewer tokens than the budget: ``_judged_alone`` says no) cut down to its final
    return (``_path``). What only a guard's return computes (the newest tokens kept when there are no queries) is no
    part of the method a description states. A function with an early return behind a probe keeps all its paths."""
    tree = _prepared(source)
    if tree is None:
        return {}
    fns = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    helpers = Defs(tree).by_name
    memory = _memory(tree, fns)
    names = _environment_names(tree, helpers)
    env = _environment_attrs(tree, helpers, names)
    cut = False
    for fn in fns:
        rets = _returns(fn)
        final = [r for r in rets if _final(fn, r)]
        if len(rets) < 2 or len(final) != 1:
            continue
        if any(_judged_alone(fn, r, helpers, memory, env, names) for r in rets if r is not final[0]):
            continue
        fn.body = _path(fn.body, final[0], helpers)
        cut = True
    if not cut:
        return dict(computation(source).features)
    found, ties, _ = _features_of(tree)
    if ties:
        found, _, _ = _features_of(_without_tie_breaks(tree, ties))
    return found


# The line ``query_statistics`` is given where the code takes the queries' mean and no spread of them (no line of a
# variance or covariance: those add the feature where they are computed). A mean query scored against keys is the
# mean of those queries' logits (q̄·k = mean of q·k): which queries score and how they are aggregated, as a window's
# rows summed are (``priorart_evidence._match_rule``); a rule that names the queries' statistics still reads it.
MEAN_QUERY_ONLY = 0


# Which queries score (class attributes, line 0) and the features that use the queries a method asks for.
# what ``layer_budgets`` (a mean budget, a length and the model in; one budget per layer out) can compute
LAYER_HOOK_FEATURES = frozenset({"layer_budget", "pyramid", "random", "layer_span"})
QUERY_CHOICE = ("window_queries", "all_queries", "last_query", "question_queries", "window_kept", "accumulate")
QUERY_USES = frozenset({"attention", "query_statistics", "query_svd", "exp_logit", "channel_selection",
                        "low_rank_scores", "block_keys", "key_envelope", "future_rope", "hashing", "reconstruction"})


def _without_tie_breaks(tree: ast.Module, ties: set[tuple[int, int, int | None, int | None, bool]]) -> ast.Module:
    """A copy of ``tree`` with every "score + tie-break" sum replaced by its score."""
    where = {t[:4]: t[4] for t in ties}

    class Drop(ast.NodeTransformer):
        def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
            key = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
            if key in where:
                return self.visit(node.left if where[key] else node.right)
            return self.generic_visit(node)

    return Drop().visit(copy.deepcopy(tree))


def _terminates(stmts: list[ast.stmt]) -> bool:
    """A block that always leaves the function (its last statement returns or raises, or branches that all do)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _terminates(last.body) and _terminates(last.orelse)
    return False


def _contains(stmts: list[ast.stmt], target: ast.stmt) -> bool:
    return any(n is target for s in stmts for n in ast.walk(s))


def _branch(st: ast.If, body: list[ast.stmt], helpers: Helpers | None = None) -> ast.If:
    """``st``'s test with one branch (the one the path takes): the test still gates what follows, unless it probes
    the inputs (``_probe``): what a probe computes only chose the path, it is no part of the score."""
    test = ast.copy_location(ast.Constant(value=True), st.test) if _probe(st.test, helpers) else st.test
    return ast.copy_location(ast.If(test=test, body=body or [ast.copy_location(ast.Pass(), st)], orelse=[]), st)


def _path(stmts: list[ast.stmt], target: ast.Return, helpers: Helpers | None = None) -> list[ast.stmt]:
    """The statements of ``stmts`` that run on the way to ``target``: a branch holding it taken, a branch that
    leaves the function elsewhere skipped, nothing after it; each test passed is kept (it gates what follows)
    unless it probes the inputs (``_probe``)."""
    out: list[ast.stmt] = []
    for st in stmts:
        if st is target:
            out.append(st)
            return out
        if isinstance(st, ast.If):
            if _contains(st.body, target):
                out.append(_branch(st, _path(st.body, target, helpers), helpers))
                return out
            if _contains(st.orelse, target):
                out.append(_branch(st, _path(st.orelse, target, helpers), helpers))
                return out
            # a branch that leaves the function elsewhere is not taken: what runs is the other branch (a design
            # test - the layer, the phase - still gates it; a probe of the inputs only chose the path)
            if _terminates(st.body) and not _terminates(st.orelse) or _terminates(st.orelse) and not _terminates(
                    st.body):
                rest = st.orelse if _terminates(st.body) else st.body
                if not _probe(st.test, helpers):
                    out.append(_branch(st, [], helpers))
                out.extend(rest)
            else:  # both arms fall through: run on the way, less any branch inside them that leaves earlier
                kept = copy.copy(st)
                kept.body = _path(st.body, target, helpers) or [ast.copy_location(ast.Pass(), st)]
                kept.orelse = _path(st.orelse, target, helpers)
                out.append(kept)
        elif isinstance(st, (ast.For, ast.While, ast.With)) and _contains(st.body, target):
            loop = copy.copy(st)
            loop.body = _path(st.body, target, helpers)
            if isinstance(loop, (ast.For, ast.While)):
                loop.orelse = []
            out.append(loop)
            return out
        elif isinstance(st, ast.Try) and _contains([st], target):
            for block in [st.body, *[h.body for h in st.handlers], st.orelse, st.finalbody]:
                if _contains(block, target):
                    out.extend(_path(block, target, helpers))
                    return out
        elif isinstance(st, ast.Try) and st.handlers and all(_terminates(h.body) for h in st.handlers):
            out.extend(st.body + st.orelse + st.finalbody)  # every handler leaves elsewhere: nothing raised here
        else:
            out.append(st)
    return out


MAX_PATHS = 16


def _returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Return]:
    """The returns of ``fn`` with a value (not those of the functions defined inside it)."""
    inner = {id(m) for sub in ast.walk(fn) if sub is not fn and isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                                ast.Lambda))
             for m in ast.walk(sub)}
    return [n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None and id(n) not in inner]


# Statistics of the layer's data a test may probe (a probe-detecting branch: keys that look synthetic, NaNs), and
# the tensors' memory layout and provenance (a view into a larger buffer, its offset, its address, its dtype's size):
# how the caller built the tensors, which no rule has a reason to branch on.
_STATISTICS = frozenset({"std", "var", "mean", "max", "min", "amax", "amin", "sum", "any", "all", "isnan", "isinf",
                         "isfinite", "norm", "item", "median", "allclose", "equal", "count_nonzero", "unique",
                         "storage_offset", "untyped_storage", "storage", "data_ptr", "is_contiguous", "stride",
                         "is_shared", "is_pinned", "_is_view", "nbytes", "element_size", "is_set_to"})


Helpers = dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]


def _budget_probe(n: ast.AST, aliases: frozenset[str] = frozenset()) -> bool:
    """A test whether the budget is exactly some computed value or one of a set (``budget == round(f * n_tokens)``,
    ``budget in {...}``, ``abs(budget / n_tokens - f) < eps``, ``isclose(budget, ...)``): whether this call runs at one
    of the arena's budgets, which a method has no reason to ask but to behave otherwise where it is measured
    elsewhere. A bound (``budget < 0.05 * n_tokens``, ``budget >= n_tokens``) or ``budget == n_tokens`` is design.
    ``aliases``: local names bound to the budget (``b = view.budget``)."""
    def budget(x: ast.AST) -> bool:
        return any(isinstance(a, ast.Attribute) and a.attr == "budget" or isinstance(a, ast.Name) and a.id in aliases
                   for a in ast.walk(x))

    if isinstance(n, ast.Compare) and budget(n):
        for left, op, right in zip([n.left, *n.comparators], n.ops, n.comparators):
            if isinstance(op, (ast.In, ast.NotIn)) and budget(left):
                return True
            if isinstance(op, (ast.Eq, ast.NotEq)):
                other = right if budget(left) else left
                if not isinstance(other, (ast.Attribute, ast.Name, ast.Constant)):
                    return True  # the budget against a computed value: a share of the tokens, a rounding
        return isinstance(n.left, ast.Call) and callee(n.left.func)[0] == "abs" and all(
            isinstance(c, ast.Constant) and isinstance(c.value, float) and 0 < c.value < 0.05 for c in n.comparators)
    return isinstance(n, ast.Call) and callee(n.func)[0] == "isclose" and budget(n)


def _budget_aliases(tree: ast.AST) -> frozenset[str]:
    """Names bound to the budget itself anywhere in ``tree`` (``b = view.budget``, ``b = int(view.budget)``, a copy of
    such a name); a value computed from it (``room = budget - len(kept)``) is not the budget."""
    out: set[str] = set()

    def is_budget(v: ast.expr) -> bool:
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in ("int", "float") and \
                len(v.args) == 1:
            v = v.args[0]
        return isinstance(v, ast.Attribute) and v.attr == "budget" or isinstance(v, ast.Name) and v.id in out

    assigns = [(n.targets[0], n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1]
    for _ in range(2):
        for target, value in assigns:
            if isinstance(target, ast.Name) and is_budget(value):
                out.add(target.id)
    return frozenset(out)


# The process and its surroundings: how it was started (argv, the main module), its environment, identity, clock,
# threads and files. A test on any of them asks who is calling, never what a rule needs.
_ENV_MODULES = frozenset({"sys", "os", "platform", "socket", "time", "inspect", "threading", "multiprocessing",
                          "psutil", "getpass", "resource", "gc", "signal", "faulthandler", "atexit", "ctypes",
                          "tracemalloc", "pwd", "grp", "sysconfig", "traceback", "shutil", "tempfile", "pathlib"})
# the few attributes of those modules that are constants of the language, not of the process
_ENV_CONSTANTS = frozenset({"float_info", "int_info", "maxsize", "hash_info", "sep", "linesep", "pathsep", "curdir",
                            "pardir", "extsep"})
# functions of the process's surroundings, called by their bare name (``from gc import get_referrers``)
_ENV_FUNCTIONS = frozenset({"get_referrers", "get_referents", "get_objects", "getrlimit", "getuid", "geteuid",
                            "getgid", "isatty", "gettrace", "getprofile", "getsignal", "getpid", "getppid",
                            "getcwd", "getenv", "gethostname", "listdir", "scandir", "getrusage", "active_count",
                            "current_thread", "currentframe", "_getframe", "stack", "getuser", "cpu_count",
                            "perf_counter", "monotonic", "process_time", "thread_time", "time_ns"})
# torch's process-wide state, set by whoever calls the method (autograd on or off, inference mode, autocast, threads,
# defaults, tracing): how the caller runs, never what a rule needs
_TORCH_RUNTIME = frozenset({"get_num_threads", "get_num_interop_threads", "is_grad_enabled", "is_inference_mode_enabled",
                            "is_autocast_enabled", "is_autocast_cpu_enabled", "get_autocast_dtype",
                            "are_deterministic_algorithms_enabled", "get_default_dtype", "get_default_device",
                            "is_anomaly_enabled", "get_rng_state", "initial_seed", "is_scripting", "is_tracing",
                            "is_compiling", "is_dynamo_compiling"})
# modules whose contents are computation (tensors, numbers, containers, the harness's interface): whatever else a
# method imports (io, glob, logging, warnings, subprocess, uuid, builtins, importlib...) holds the process's
# surroundings, so a test on it asks who is calling (default-deny: a new module needs no entry to count)
_COMPUTE_MODULES = frozenset({"torch", "math", "cmath", "numpy", "functools", "itertools", "collections",
                              "dataclasses", "typing", "typing_extensions", "heapq", "bisect", "statistics", "random",
                              "enum", "abc", "operator", "copy", "harness", "einops", "scipy", "__future__", "re",
                              "string", "numbers", "fractions", "decimal", "array", "struct", "contextlib",
                              "collections.abc", "sklearn", "faiss", "networkx", "opt_einsum", "triton"})
# what a module holds beside its computation: the process modules it imported (``torch.os``, ``harness.api.sys``)
# and torch's views of the devices, the process group, the build and the compiler
_SUBMODULE_TELLS = _ENV_MODULES | {"cuda", "distributed", "multiprocessing", "backends", "version", "__version__",
                                   "hub", "_C", "profiler", "__config__", "_dynamo", "compiler", "mps", "xpu",
                                   "_utils", "overrides"}
# the module's own identity and the interpreter's: where the file was loaded from, under which name, by whom
_PROCESS_DUNDERS = frozenset({"__file__", "__name__", "__spec__", "__loader__", "__builtins__", "__cached__",
                              "__package__", "__path__"})
# introspection of objects and frames: an object's class, module and namespace, a function's globals, a frame's caller
_INTROSPECTION = frozenset({"__module__", "__class__", "__dict__", "__globals__", "__code__", "__closure__", "__self__",
                            "__subclasses__", "__mro__", "__bases__", "__qualname__", "__func__", "__wrapped__",
                            "__file__", "__spec__", "__loader__", "__builtins__", "__name__", "f_back", "f_globals",
                            "f_locals", "f_code", "tb_frame", "gi_frame", "cr_frame"})
# builtins that read the interpreter or the files rather than compute: the namespaces, object identities, the hash
# seed, files, the console
_ENV_BUILTINS = frozenset({"globals", "vars", "locals", "dir", "open", "id", "hash", "input", "breakpoint", "compile",
                           "exec", "eval", "help"})
# how the caller built a tensor: autograd's record of it, where it lives, its layout
_TENSOR_PROVENANCE = frozenset({"requires_grad", "grad_fn", "is_leaf", "_version", "grad", "is_cuda", "is_meta",
                                "device", "is_inference", "is_sparse", "layout"})
_ENV_METHODS = _ENV_FUNCTIONS - {"stack"}  # the same on a module under another name (torch.stack is no frame stack)
_ENV_ATTRS = frozenset({"argv", "orig_argv", "modules", "executable", "environ", "getenv", "getpid", "getppid",
                        "gethostname", "node", "uname", "_getframe", "stack", "currentframe", "get_num_threads",
                        "get_num_interop_threads", "cpu_count", "perf_counter", "perf_counter_ns", "time", "time_ns",
                        "monotonic", "monotonic_ns", "process_time", "thread_time", "getcwd", "listdir", "scandir",
                        "exists", "isfile", "isdir", "current_thread", "active_count", "getuser", "getrusage",
                        "process_iter", "Process"})


def _reads_environment(node: ast.AST, helpers: Helpers | None = None, depth: int = 0,
                       names: frozenset[str] = frozenset()) -> bool:
    """Whether ``node`` (or a helper of the module it calls) reads the process's surroundings: ``sys.argv``,
    ``sys.modules["__main__"]``, ``os.environ``, the pid, the host, the clock, the thread count, the files; or a name
    bound to them (``names``: ``_environment_names``)."""
    constant_bases = {id(x.value) for x in ast.walk(node) if isinstance(x, ast.Attribute) and x.attr in _ENV_CONSTANTS}
    placing = _placement(node)
    for x in ast.walk(node):
        if id(x) in placing:
            continue  # torch.zeros(n, device=k.device), x.to(k.device): where a tensor goes, not who is calling
        if names and isinstance(x, ast.Name) and x.id in names and id(x) not in constant_bases:
            return True  # r(view.keys) after ``from gc import get_referrers as r``; who = gc.get_referrers(...)
        if isinstance(x, ast.Call) and callee(x.func)[0] in ("__import__", "import_module"):
            return True  # a module imported by name while the method runs
        if isinstance(x, ast.Attribute) and isinstance(x.value, ast.Name) and x.attr in _ENV_ATTRS and \
                x.value.id in _ENV_MODULES | {"path"}:
            return True  # (torch.stack is no frame stack)
        if isinstance(x, ast.Attribute) and x.attr in _TORCH_RUNTIME:
            return True  # torch.get_num_threads(), torch.is_grad_enabled(), torch.jit.is_scripting(): how torch runs
        if isinstance(x, ast.Attribute) and isinstance(x.value, ast.Name) and x.value.id in _ENV_MODULES and \
                x.attr not in _ENV_CONSTANTS:
            return True  # anything of the process's modules (sys.stdout is sys.stderr, gc.get_referrers(...))
        if isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and x.func.id in _ENV_FUNCTIONS:
            return True
        if isinstance(x, ast.Call) and isinstance(x.func, ast.Attribute) and x.func.attr in _ENV_METHODS:
            return True  # the same through a module imported under another name (import gc as g)
        if isinstance(x, ast.Constant) and x.value == "__main__":
            return True
        if isinstance(x, ast.Name) and x.id in _PROCESS_DUNDERS:
            return True  # __file__.startswith(...), __name__: where and how the module was loaded
        if isinstance(x, ast.Attribute) and (x.attr in _INTROSPECTION or x.attr in _TENSOR_PROVENANCE or
                                             "." + x.attr in names):
            return True  # type(view).__module__, view.keys.requires_grad, _Ctx.host (a class attribute set to sys)
        if isinstance(x, ast.Attribute) and x.attr in _SUBMODULE_TELLS and isinstance(x.value, ast.Name) and \
                "module:" + x.value.id in names:
            return True  # torch.cuda.is_available(), torch.os.environ, ha.sys.argv
        if isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and x.func.id in _ENV_BUILTINS:
            return True  # open("/proc/..."), globals(), id(view), hash("x")
        if isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and (
                x.func.id == "hasattr" or x.func.id == "getattr" and len(x.args) == 3) and x.args and not (
                isinstance(x.args[0], ast.Name) and x.args[0].id in ("self", "cls")):
            return True  # hasattr(view, "_bank"), getattr(builtins, "__IPYTHON__", 0): what only some callers have
        if helpers and depth < 3 and isinstance(x, ast.Call) and callee(x.func)[0] in helpers and x is not node:
            if any(_reads_environment(fn, helpers, depth + 1, names) for fn in helpers[callee(x.func)[0] or ""]):
                return True
    return False


_PLACEMENT_KEYWORDS = frozenset({"device", "dtype", "layout", "pin_memory", "requires_grad", "non_blocking"})


def _placement(node: ast.AST) -> set[int]:
    """The nodes inside the arguments that only place a new tensor (``device=``, ``dtype=``, ``x.to(k.device)``,
    ``torch.device(...)``): reading a tensor's device there allocates beside it, it asks nothing of the caller."""
    out: set[int] = set()
    for n in ast.walk(node):
        if not isinstance(n, ast.Call):
            continue
        inside = [k.value for k in n.keywords if k.arg in _PLACEMENT_KEYWORDS]
        if isinstance(n.func, ast.Attribute) and n.func.attr in ("to", "cuda", "cpu", "type_as", "device"):
            inside += n.args
        out.update(id(x) for v in inside for x in ast.walk(v))
    return out


def _environment_names(tree: ast.Module, helpers: Helpers) -> frozenset[str]:
    """Names bound to the process's surroundings anywhere in the module: one of its modules imported under any name
    (``import gc as g``), a function or attribute of one imported by name (``from gc import get_referrers as r``,
    ``from sys import stdout``), and a variable assigned from a value that reads them (``who = r(view.keys)``,
    ``E = os.environ``). A test on any of them asks who is calling, however the reading was spelt."""
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out.update(a.asname or a.name.split(".")[0] for a in n.names if a.name.split(".")[0] in _ENV_MODULES or
                       not _compute_module(a.name))
            out.update("module:" + (a.asname or a.name.split(".")[0]) for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.module and (n.module.split(".")[0] in _ENV_MODULES or
                                                              not _compute_module(n.module)) and not n.level:
            out.update(a.asname or a.name for a in n.names if a.name not in _ENV_CONSTANTS and a.name != "*")
        elif isinstance(n, ast.ImportFrom) and n.module and n.module.split(".")[0] == "torch":
            out.update(a.asname or a.name for a in n.names if a.name in _TORCH_RUNTIME)
            out.update("module:" + (a.asname or a.name) for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            out.update("module:" + (a.asname or a.name) for a in n.names if a.name[:1].islower())
    controlled = _environment_controlled(tree, helpers, frozenset(out))
    assigns = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr))]
    classes = {id(st) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for st in c.body}
    fns = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    for _ in range(3):
        before = len(out)
        for a in assigns:
            if a.value is not None and (id(a) in controlled or
                                        _reads_environment(a.value, helpers, names=frozenset(out))):
                targets = a.targets if isinstance(a, ast.Assign) else [a.target]
                for t in (t for tgt in targets for t in ast.walk(tgt)):
                    if isinstance(t, ast.Name):
                        out.add(t.id)
                        if id(a) in classes:  # a class attribute: read as Cls.x or self.x
                            out.add("." + t.id)
                    elif isinstance(t, ast.Attribute) and not self_attr(t):
                        out.add("." + t.attr)  # _Ctx.host = sys, holder.m = os: read later as anything.host
        for fn in fns:  # a parameter whose default reads them (def who(m=sys): m.argv)
            args = fn.args.posonlyargs + fn.args.args
            for arg, default in zip(args[len(args) - len(fn.args.defaults):], fn.args.defaults):
                if _reads_environment(default, helpers, names=frozenset(out)):
                    out.add(arg.arg)
            for arg2, d2 in zip(fn.args.kwonlyargs, fn.args.kw_defaults):
                if d2 is not None and _reads_environment(d2, helpers, names=frozenset(out)):
                    out.add(arg2.arg)
        if len(out) == before:
            break
    return frozenset(out)


def _compute_module(name: str) -> bool:
    """``name`` (dotted) is a module of computation (``_COMPUTE_MODULES``); torch's submodules of the process's
    devices and runtime (``torch.cuda``, ``torch.distributed``...) are not."""
    parts = name.split(".")
    if parts[0] == "torch" and len(parts) > 1 and parts[1] in _SUBMODULE_TELLS:
        return False
    return parts[0] in _COMPUTE_MODULES


def _environment_controlled(tree: ast.Module, helpers: Helpers, names: frozenset[str]) -> set[int]:
    """The assignments whose running depends on the process's surroundings: inside an if whose test reads them, or
    inside a try whose body reads them (``try: open("/proc/1/cgroup") ... except OSError: self.boxed = True``): the
    value assigned is a constant, what it says is who is calling."""
    out: set[int] = set()
    for n in ast.walk(tree):
        blocks: list[list[ast.stmt]] = []
        if isinstance(n, (ast.If, ast.While)) and _reads_environment(n.test, helpers, names=names):
            blocks = [n.body, n.orelse]
        elif isinstance(n, ast.Try) and any(_reads_environment(st, helpers, names=names) for st in n.body):
            blocks = [n.body, *[h.body for h in n.handlers], n.orelse]
        elif isinstance(n, ast.IfExp) and _reads_environment(n.test, helpers, names=names):
            continue  # the value itself reads them: the assignment is caught by its value
        out.update(id(x) for b in blocks for st in b for x in ast.walk(st)
                   if isinstance(x, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)))
    return out


def _environment_attrs(tree: ast.Module, helpers: Helpers, names: frozenset[str] = frozenset()) -> frozenset[str]:
    """Attributes of the module set (anywhere, ``setup`` too) from a value that reads the process's surroundings:
    a later test on them is a test on who is calling."""
    out: set[str] = set()
    controlled = _environment_controlled(tree, helpers, names)
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and (id(n) in controlled or _reads_environment(n.value, helpers, names=names)):
            for t in n.targets:
                if isinstance(t, ast.Attribute) and self_attr(t):
                    out.add(t.attr)
    return frozenset(out)


def _budget_params(call: ast.Call, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                   budgets: frozenset[str]) -> frozenset[str]:
    """The helper's parameters that receive the budget at this call (``self._odd(view.budget, t)``, ``b=budget``):
    a test inside the helper on them tests the budget."""
    def is_budget(a: ast.expr) -> bool:
        if isinstance(a, ast.Call) and isinstance(a.func, ast.Name) and a.func.id in ("int", "float") and a.args:
            a = a.args[0]
        return isinstance(a, ast.Attribute) and a.attr == "budget" or isinstance(a, ast.Name) and a.id in budgets

    params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        params = params[1:]
    out = {params[i] for i, a in enumerate(call.args) if i < len(params) and is_budget(a)}
    out |= {k.arg for k in call.keywords if k.arg and is_budget(k.value)}
    return frozenset(out)


def _probe(test: ast.expr, helpers: Helpers | None = None, depth: int = 0,
           budgets: frozenset[str] = frozenset(), env: frozenset[str] = frozenset(),
           names: frozenset[str] = frozenset()) -> bool:
    """A test that probes the inputs rather than the configuration: a statistic of a tensor (``x.std() < 1e-3``,
    ``torch.isnan(a).any()``) or a size against a literal (``a.shape[-1] < 200``). The layer index, the phase, the
    board, a budget, a None check are the method's design, and its arms are not judged apart. A helper of the
    module the test calls (``if self._odd(view)``) is read for the same."""
    if _reads_environment(test, helpers, names=names):
        return True  # who is calling: how the process was started, its environment, clock or threads
    for n in ast.walk(test):
        if env and (isinstance(n, ast.Attribute) and self_attr(n) and n.attr in env or isinstance(n, ast.Call) and
                    isinstance(n.func, ast.Name) and n.func.id == "getattr" and len(n.args) >= 2 and
                    isinstance(n.args[1], ast.Constant) and n.args[1].value in env):
            return True  # an attribute set from the process's surroundings (in setup, say)
        if helpers and depth < 3 and isinstance(n, ast.Call) and callee(n.func)[0] in helpers:
            for fn in helpers[callee(n.func)[0] or ""]:
                inner = budgets | _budget_params(n, fn, budgets)
                if any(_probe(r.value, helpers, depth + 1, inner, names=names) for r in _returns(fn)
                       if r.value is not None):
                    return True
        if isinstance(n, ast.Call) and callee(n.func)[0] in _STATISTICS and not (
                isinstance(n.func, ast.Name) and n.func.id in ("max", "min", "sum", "any", "all")):
            return True
        if isinstance(n, ast.Attribute) and n.attr == "_base":
            return True  # x._base: whether the tensor is a view into another one (how the caller built it)
        if _budget_probe(n, budgets):
            return True
        if isinstance(n, ast.Compare) and any(isinstance(c, ast.Constant) and isinstance(c.value, (int, float))
                                              and not isinstance(c.value, bool) and c.value not in (0, 1)
                                              for c in [n.left, *n.comparators]) and any(
                isinstance(x, ast.Attribute) and x.attr in ("shape", "n_tokens") or
                isinstance(x, ast.Call) and callee(x.func)[0] in ("size", "numel") for x in ast.walk(n)):
            return True
    return False


def _final(fn: ast.FunctionDef | ast.AsyncFunctionDef, r: ast.Return) -> bool:
    """``r`` ends the function's body (its last statement, or the last of an arm of a final if / else): the path
    the method falls through to."""
    last = fn.body[-1] if fn.body else None
    while isinstance(last, ast.If):
        if r in (last.body[-1:] + last.orelse[-1:]):
            return True
        last = last.orelse[-1] if last.orelse else None
    return last is r


def _tests_on_the_way(stmts: list[ast.stmt], target: ast.Return) -> list[ast.AST] | None:
    """The tests of the ifs that enclose ``target`` (None when ``stmts`` does not hold it); for a try whose handler
    or else holds it, the try's body as a module (what raised or not chose the path)."""
    for st in stmts:
        if st is target:
            return []
        for attr in ("body", "orelse", "handlers", "finalbody"):
            block = getattr(st, attr, None)
            if not block:
                continue
            if attr == "handlers":
                block = [x for h in block for x in h.body]
            inner = _tests_on_the_way(block, target)
            if inner is not None:
                if isinstance(st, ast.Try) and attr in ("handlers", "orelse"):
                    return [ast.Module(body=st.body, type_ignores=[])] + inner
                return ([st.test] if isinstance(st, ast.If) else []) + inner
    return None


def _history(test: ast.expr, helpers: Helpers | None = None, memory: frozenset[str] = frozenset(),
             depth: int = 0, names: frozenset[str] = frozenset()) -> bool:
    """A test on what the method remembers of earlier calls: ``view.state``, an attribute of the module set outside
    its constructor, or a helper of the module that reads one. What a method has seen before tells a probe run from
    a scored one as well as any statistic of the inputs does."""
    def remembered(n: ast.AST) -> bool:
        return isinstance(n, ast.Attribute) and (n.attr == "state" or self_attr(n) and n.attr in memory) or \
            isinstance(n, ast.Name) and (n.id in names or f"global:{n.id}" in memory)

    for n in ast.walk(test):
        if remembered(n):
            return True
        if helpers and depth < 3 and isinstance(n, ast.Call) and callee(n.func)[0] in helpers:
            for fn in helpers[callee(n.func)[0] or ""]:
                if any(remembered(x) for x in ast.walk(fn)) or any(
                        _history(r.value, helpers, memory, depth + 1) for r in _returns(fn) if r.value is not None):
                    return True
    return False


_MUTATORS = CONTAINER_MUTATORS


def _memory(tree: ast.Module, fns: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> frozenset[str]:
    """What a call changes that the next call can read, outside ``__init__`` and ``setup``: attributes of the module
    (``self.calls += 1``, ``self.trail.append(...)``, ``setattr(self, "x", ...)``) by their names, and names of the
    file's own top level (a global counter, a dict filled in place) as ``global:<name>``."""
    top = {t.id for st in tree.body if isinstance(st, (ast.Assign, ast.AnnAssign))
           for tgt in (st.targets if isinstance(st, ast.Assign) else [st.target]) for t in ast.walk(tgt)
           if isinstance(t, ast.Name)}
    out: set[str] = set()

    def mark(base: ast.expr) -> None:
        while isinstance(base, ast.Subscript):
            base = base.value
        if isinstance(base, ast.Attribute) and self_attr(base):
            out.add(base.attr)
        elif isinstance(base, ast.Name) and base.id in top:
            out.add(f"global:{base.id}")

    for fn in fns:
        if fn.name in ("__init__", "setup"):
            continue
        for n in ast.walk(fn):
            if isinstance(n, ast.Global):
                out.update(f"global:{g}" for g in n.names)
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
                n, (ast.AugAssign, ast.AnnAssign)) else []
            for t in targets:
                if isinstance(t, (ast.Subscript, ast.Attribute)):
                    mark(t)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _MUTATORS:
                mark(n.func.value)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setattr" and \
                    len(n.args) >= 2 and isinstance(n.args[0], ast.Name) and n.args[0].id == "self" and \
                    isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str):
                out.add(n.args[1].value)
    return frozenset(out)


def _judged_alone(fn: ast.FunctionDef | ast.AsyncFunctionDef, r: ast.Return, helpers: Helpers,
                  memory: frozenset[str], env: frozenset[str] = frozenset(),
                  env_names: frozenset[str] = frozenset()) -> bool:
    """The final return is the path the method falls through to; an early one is judged on its own where a test on
    the way probes the inputs (``_probe``) or the method's memory of earlier calls (``_history``): the ported rule
    returned early on the calls it recognises as scored. An early return behind a design test (no queries, fewer
    tokens than the budget, the layer, the phase) is a guard, not the method's path."""
    if _final(fn, r):
        return True
    names: set[str] = set()  # locals read off the memory (``seen = view.state.get("step")``)
    assigns = [n for n in ast.walk(fn) if isinstance(n, ast.Assign)]
    for _ in range(3):
        for a in assigns:
            if _history(a.value, helpers, memory, names=frozenset(names)):
                names.update(t.id for tgt in a.targets for t in ast.walk(tgt) if isinstance(t, ast.Name))
    return any(_probe(t, helpers, budgets=_budget_aliases(fn), env=env, names=env_names) or
               _history(t, helpers, memory, names=frozenset(names)) if isinstance(t, ast.expr) else
               _reads_environment(t, helpers, names=env_names)  # a try's body: whether it raised chose the path
               for t in _tests_on_the_way(fn.body, r) or [])


def return_paths(tree: ast.Module) -> list[tuple[int, ast.Module]]:
    """The paths a method may take, each a copy of the module: for each function that returns a value at several
    places, its final return and each early return behind a probe of the inputs or of the method's memory
    (``_judged_alone``), with the function cut down to the statements that run on the way to it (``_path``:
    branches that leave the function earlier skipped); for each if / else whose arms both fall through
    and whose test probes the inputs (``_probe``), one copy per arm (the line of the arm's first statement); for
    each such if with no else, one copy that skips it (the line of the if). A probe-detecting or fallback branch is
    one path, the rule the method ports another, and each is read on its own (at most ``MAX_PATHS``)."""
    out: list[tuple[int, ast.Module]] = []
    fns = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    helpers = Defs(tree).by_name
    memory = _memory(tree, fns)
    aliases = _budget_aliases(tree)
    names = _environment_names(tree, helpers)
    env = _environment_attrs(tree, helpers, names)
    for i, fn in enumerate(fns):
        rets = _returns(fn)
        if len(rets) < 2:
            continue
        for j, r in enumerate(rets):
            if len(out) >= MAX_PATHS:
                return out
            if not _judged_alone(fn, r, helpers, memory, env, names):
                continue
            copy_ = copy.deepcopy(tree)
            fn2 = [n for n in ast.walk(copy_) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))][i]
            fn2.body = _path(fn2.body, _returns(fn2)[j], Defs(copy_).by_name)
            out.append((r.lineno, copy_))

    def arms(n: ast.AST) -> bool:  # an if / else whose arms both fall through, on a probe
        return isinstance(n, ast.If) and bool(n.body) and bool(n.orelse) and not _terminates(n.body) and \
            not _terminates(n.orelse) and not any(isinstance(x, ast.Return) for x in ast.walk(n)) and \
            _probe(n.test, helpers, budgets=aliases, env=env, names=names)

    def bare(n: ast.AST) -> bool:  # an if with no else that falls through (on odd inputs, s = pool(s)), on a probe
        return isinstance(n, ast.If) and bool(n.body) and not n.orelse and not _terminates(n.body) and \
            not any(isinstance(x, ast.Return) for x in ast.walk(n)) and _probe(n.test, helpers, budgets=aliases,
                                                                                   env=env, names=names)

    def take_arm(tree_: ast.Module, st: ast.AST, choice: int) -> int:
        assert isinstance(st, ast.If)
        taken = st.body if choice == 0 else st.orelse
        st.body, st.orelse = taken, []
        st.test = ast.copy_location(ast.Constant(value=True), st.test)  # the probe only chose the arm
        return taken[0].lineno

    def skip(tree_: ast.Module, st: ast.AST, choice: int) -> int:
        assert isinstance(st, ast.If)
        st.test = ast.copy_location(ast.Constant(value=False), st.test)
        st.body = [ast.copy_location(ast.Pass(), st)]
        return st.lineno

    def raising(n: ast.AST) -> bool:  # a try whose body reads the surroundings, its blocks falling through
        return isinstance(n, ast.Try) and bool(n.handlers) and not any(isinstance(x, ast.Return) for x in ast.walk(n)) \
            and any(_reads_environment(b, helpers, names=names) for b in n.body)

    def take_block(tree_: ast.Module, st: ast.AST, choice: int) -> int:  # nothing raised (0), or a handler ran
        assert isinstance(st, ast.Try)
        block = st.body + st.orelse if choice == 0 else st.handlers[choice - 1].body
        _replace_statement(tree_, st, ast.copy_location(ast.If(test=ast.Constant(value=True), body=block, orelse=[]),
                                                        st))
        return block[0].lineno

    def chooses(n: ast.AST) -> bool:  # a conditional expression on who is calling (s = a(v) if id(v) % 2 else b(v))
        return isinstance(n, ast.IfExp) and (_reads_environment(n.test, helpers, names=names) or any(
            isinstance(x, ast.Attribute) and self_attr(x) and x.attr in env for x in ast.walk(n.test)))

    def take_value(tree_: ast.Module, target: ast.AST, choice: int) -> int:
        assert isinstance(target, ast.IfExp)
        chosen = target.body if choice == 0 else target.orelse

        class Take(ast.NodeTransformer):
            def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
                return chosen if node is target else self.generic_visit(node)

        Take().visit(tree_)
        return chosen.lineno

    for pred, choices, edit in ((arms, lambda n: 2, take_arm), (bare, lambda n: 1, skip),
                                (raising, lambda n: 1 + len(getattr(n, "handlers", [])), take_block),
                                (chooses, lambda n: 2, take_value)):
        if not _variants(tree, pred, choices, edit, out):
            break
    return out


def _variants(tree: ast.Module, pred: Callable[[ast.AST], bool], choices: Callable[[ast.AST], int],
              edit: Callable[[ast.Module, ast.AST, int], int], out: list[tuple[int, ast.Module]]) -> bool:
    """For each node of ``tree`` that ``pred`` holds for, one copy of the tree per choice, edited there (``edit``
    returns the line the copy is known by); False once ``MAX_PATHS`` copies are out."""
    for k, node in enumerate([n for n in ast.walk(tree) if pred(n)]):
        for choice in range(choices(node)):
            if len(out) >= MAX_PATHS:
                return False
            twin_tree = copy.deepcopy(tree)
            twin = [n for n in ast.walk(twin_tree) if pred(n)][k]
            out.append((edit(twin_tree, twin, choice), twin_tree))
    return True


def _replace_statement(tree: ast.AST, old: ast.stmt, new: ast.stmt) -> None:
    """Put ``new`` where ``old`` stands in its block."""
    for n in ast.walk(tree):
        for attr in ("body", "orelse", "finalbody"):
            block = getattr(n, attr, None)
            if isinstance(block, list) and any(x is old for x in block):
                block[[i for i, x in enumerate(block) if x is old][0]] = new
                return
        for h in getattr(n, "handlers", []) or []:
            if any(x is old for x in h.body):
                h.body[[i for i, x in enumerate(h.body) if x is old][0]] = new
                return


def _features_of(tree: ast.Module) -> tuple[dict[str, int], set[tuple[int, int, int | None, int | None, bool]],
                                            set[str]]:
    """The features of a parsed module, where it adds a tie-break to a score, and the interface data it reads."""
    defs = Defs(tree)
    schedules = _schedule_tables(tree)  # hand-set schedules of the layers' budgets: no fitted numbers
    attrs = class_attrs(tree)
    flow = _tagged(tree, defs, schedules, attrs)
    if flow.recalled:
        # view.recall(name) gives back what view.remember(name, x) stored: a run where recalls give nothing of their
        # own finds what each name stores, and where some name stores no attention (a tier, a counter, a stamp) the
        # hooks are run again with every recall giving what its name stores
        probe = _tagged(tree, defs, schedules, attrs, recall_tags={}, recall_default=set())
        if any("A" not in probe.stored.get(k, {"A"}) for k in flow.recalled):
            flow = _tagged(tree, defs, schedules, attrs, recall_tags=probe.stored, recall_default={"A"})
    found = flow.found
    flow.kept_rank |= _handed_to_store(defs)
    for group in flow.attr_groups:
        if group & flow.kept_rank:
            flow.kept_rank |= group  # a selection put through one accessor is read back through the others
    _read_kept_layers(tree, defs, flow, found)
    if flow.layer_test and flow.kept_rank and _reads_kept(defs, flow.kept_rank):
        found.setdefault("layer_reuse", 0)
    if "all_queries" in found and "attention" in found and "query_statistics" not in found and (
            found["all_queries"] != 0 or _reads_every_query(tree)):
        # attention received from every query, summed (asked for by the class, the queries must be read whole
        # somewhere: rows picked from them, the closing rows or the rows of chosen tokens, are no sum over all)
        found.setdefault("accumulate", found["all_queries"])
    if "window_queries" in found and ("recent" in found or "sinks" in found) and "attention" in found:
        found.setdefault("window_kept", found["window_queries"])
    line = _learned_table(tree, defs, schedules)
    if line is not None:
        found.setdefault("learned_weights", line)
    if "M" in set().union(*flow.tags.values()) and "query_statistics" not in found:
        for name, t in flow.tags.items():
            if "M" in t and "Q" in t:
                found.setdefault("query_statistics", MEAN_QUERY_ONLY)
                break
    return dict(found), set(flow.tie_nodes), set(flow.read)


def _reads_every_query(tree: ast.Module) -> bool:
    """Whether the code reads the queries it is handed whole somewhere: ``view.attention()`` without queries of its
    own, or ``view.queries`` not subscripted on the spot (nor taken apart by ``split``/``chunk``)."""
    parents = parent_map(tree)
    bound: dict[str, list[ast.expr]] = {}
    for p in ast.walk(tree):
        if isinstance(p, ast.Assign) and len(p.targets) == 1 and isinstance(p.targets[0], ast.Name):
            bound.setdefault(p.targets[0].id, []).append(p.value)

    written = {t.attr for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
               and fn.name not in ("__init__", "setup") for a in ast.walk(fn) if isinstance(a, (ast.Assign, ast.AugAssign))
               for t in (a.targets if isinstance(a, ast.Assign) else [a.target])
               if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}

    def since_last_call(index: ast.expr) -> bool:
        """Rows newer than a remembered stamp (``qpos > self.seen``, ``> hall["heard"]``): every query, over the calls."""
        exprs = [index, *(bound.get(index.id, []) if isinstance(index, ast.Name) else [])]
        return any(isinstance(x, ast.Compare) and any(
            isinstance(y, ast.Attribute) and isinstance(y.value, ast.Name) and y.value.id == "self" and
            y.attr in written or
            isinstance(y, ast.Attribute) and y.attr == "state" or
            isinstance(y, ast.Subscript) and isinstance(y.slice, ast.Constant) and isinstance(y.slice.value, str)
            for c in x.comparators for y in ast.walk(c)) for e in exprs for x in ast.walk(e))

    def query_rows(sub: ast.Subscript) -> ast.expr | None:
        """The index on the query axis (the second) of ``view.queries[...]``, through one more subscript when the
        first takes query heads only (``q[h * g:(h + 1) * g][:, pick]``); None where every row is read."""
        for _ in range(2):
            if isinstance(sub.slice, ast.Tuple):
                rows = sub.slice.elts[1] if len(sub.slice.elts) > 1 else None
                whole = isinstance(rows, ast.Slice) and rows.lower is None and rows.upper is None
                return None if rows is None or whole else rows
            nxt = parents.get(id(sub))
            if not (isinstance(nxt, ast.Subscript) and nxt.value is sub):
                return None
            sub = nxt
        return None

    def picked(index: ast.expr, depth: int = 0) -> bool:
        """Rows chosen by a ranking of scores (a top-k, a sort) or the closing window (``[:, -w:]``, positions above
        the last one less w), not a sample of every row."""
        if isinstance(index, ast.Slice):
            return index.upper is None and index.lower is not None and (
                isinstance(index.lower, ast.UnaryOp) and isinstance(index.lower.op, ast.USub) or
                isinstance(index.lower, ast.Constant) and isinstance(index.lower.value, int) and index.lower.value < 0)
        exprs = [index, *(bound.get(index.id, []) if isinstance(index, ast.Name) else [])]
        for e in exprs:
            for x in ast.walk(e):
                if isinstance(x, ast.Call) and callee(x.func)[0] in ("topk", "argsort", "sort", "kthvalue", "argmax"):
                    return True
                if isinstance(x, ast.Compare) and any(isinstance(c, ast.Call) and callee(c.func)[0] in ("max", "amax")
                                                      for y in [x.left, *x.comparators] for c in ast.walk(y)):
                    return True  # positions at or above the newest less a width: the closing window
                if depth < 2 and isinstance(x, ast.Name) and x is not index and x.id in bound and picked(x, depth + 1):
                    return True
        return False

    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and callee(n.func)[0] == "attention" and isinstance(n.func, ast.Attribute) and \
                not n.args and not any(k.arg == "queries" for k in n.keywords):
            return True
        if isinstance(n, ast.Attribute) and n.attr == "queries" and isinstance(n.ctx, ast.Load):
            up = parents.get(id(n))
            if isinstance(up, ast.Subscript) and up.value is n:
                rows = query_rows(up)
                if rows is None or since_last_call(rows) or not picked(rows):
                    return True  # every row, rows newer than a stamp, or a sample of them (strided, per chunk)
                continue
            if isinstance(up, ast.Compare) or \
                    isinstance(up, ast.Attribute) and up.attr in ("shape", "device", "dtype", "ndim", "size") or \
                    isinstance(up, ast.Call) and callee(up.func)[0] == "len":
                continue  # a part of them, a test for none, a size
            return True
    return False


def _tagged(tree: ast.Module, defs: Defs, schedules: set[int], attrs: dict[str, ast.expr],
            recall_tags: dict[str | None, set[str]] | None = None, recall_default: set[str] | None = None) \
        -> FeatureTagger:
    """The interface hooks run through a fresh tagger (``recall_tags``: what ``view.recall`` gives, by name)."""
    flow = FeatureTagger(defs, self_attr_reads(tree))
    flow.recall_tags = recall_tags
    if recall_default is not None:
        flow.recall_default = recall_default
    flow.state_tables = state_tables(tree)
    flow.tags = {"view": {"VIEW"}, **_fitted_names(tree, schedules)}
    flow.constants = _constants(tree, attrs)
    qw = const_int(attrs.get("query_window"))
    found = flow.found
    if qw is not None and qw > 0:
        if qw == 1:
            found.setdefault("last_query", 0)
        elif qw >= 1 << 14:
            found.setdefault("all_queries", 0)
        else:
            found.setdefault("window_queries", 0)
    if is_true(attrs.get("question_queries")):
        found.setdefault("question_queries", 0)
    if is_true(attrs.get("reconstruction_queries")):
        found.setdefault("reconstruction", 0)
    # every interface hook is an entry point; each starts with `view` as the layer view
    for hook in ("setup", "layer_budgets", "select", "on_decode"):
        for fn in defs.by_name.get(hook, []):
            if hook == "layer_budgets":
                found.setdefault("layer_budget", fn.lineno)
                params = [a.arg for a in fn.args.args if a.arg != "self"]
                flow.tags.update({p: set() for p in params})
            if hook == "on_decode":
                found.setdefault("decode", fn.lineno)
            for a in fn.args.args:
                if a.arg != "self" and hook in ("select", "on_decode"):
                    flow.tags[a.arg] = {"VIEW"}
            before = set(found)
            flow.run_def(fn)
            if hook == "layer_budgets":
                # the hook sees a mean budget, a length and the model, no tokens: what its arithmetic over the layers'
                # array looks like (its last entry, an entry beside an argmax) places no token
                for f in set(found) - before - LAYER_HOOK_FEATURES:
                    del found[f]
                _pyramid(fn, found, defs)
    flow.finish()
    return flow


def _read_kept_layers(tree: ast.Module, defs: Defs, flow: FeatureTagger, found: dict[str, int]) -> None:
    """Keys or values a hook keeps on the module (``self.below = keys``) are what its next call, for the next layer,
    reads back: a read placed before the store in the code (``prev = self.below; self.below = k``) reads the other
    layer's keys. The selection hooks are run once more with those attributes holding what was stored, and only what
    compares this layer with the kept one (``layer_similarity``), factorises it joined with this layer's
    (``cross_layer_basis``) or tests how they compare before returning a kept selection (``layer_reuse``) is taken
    from that run."""
    kept = {k: v for k, v in flow.tags.items() if k.startswith("self.") and "LK" in v}
    if not kept or {"layer_similarity", "cross_layer_basis", "layer_reuse"} <= set(found):
        return
    again = FeatureTagger(defs, self_attr_reads(tree))
    again.tags = {**flow.tags, **kept}
    again.constants = flow.constants
    for hook in ("select", "on_decode"):
        for fn in defs.by_name.get(hook, []):
            for a in fn.args.args:
                if a.arg != "self":
                    again.tags[a.arg] = {"VIEW"}
            again.run_def(fn)
    if "cross_layer_basis" in again.found:
        found.setdefault("cross_layer_basis", again.found["cross_layer_basis"])
    if again.layer_test and flow.kept_rank and _reads_kept(defs, flow.kept_rank):
        found.setdefault("layer_reuse", 0)  # another layer's selection served when the layers compare so
    if "layer_similarity" in again.found and "layer_similarity" not in found:
        line = again.found["layer_similarity"]
        found.setdefault("layer_similarity", line)
        if found.get("key_similarity") == line and again.found.get("key_similarity") != line:
            del found["key_similarity"]  # the keys compared there were the other layer's, not this layer's own


def _constants(tree: ast.Module, attrs: dict[str, ast.expr]) -> dict[str, float]:
    """Module and class constants bound to a number: ``EPS = 1e-9`` (name), ``tiny = 1e-9`` in a class (self.tiny)."""
    def number(v: ast.expr) -> float | None:
        try:
            x = ast.literal_eval(v)
        except (ValueError, SyntaxError, TypeError):
            return None
        return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None

    out: dict[str, float] = {}
    for name, value in attrs.items():
        if (x := number(value)) is not None:
            out[f"self.{name}"] = x
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and \
                (x := number(node.value)) is not None:
            out[node.targets[0].id] = x
    return out


def _handed_to_store(defs: Defs) -> set[str]:
    """Callables the module holds (``self.put``, not a method of its own) that a selection hook hands the very
    selection it returns to (``self.put(key, picked)`` beside ``return Keep.same_for_all_heads(picked, H)``): a
    store of the selection, kept across calls like ``self.sel[key] = picked``."""
    out: set[str] = set()
    methods = {name for name, fns in defs.by_name.items() if any(id(f) in defs.methods for f in fns)}
    for hook in ("select", "on_decode"):
        for fn in defs.by_name.get(hook, []):
            returned = {n.id for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value is not None
                        for c in ast.walk(r.value) if isinstance(c, ast.Call) and _keep_call(c)
                        for a in c.args for n in ast.walk(a) if isinstance(n, ast.Name)}
            for c in ast.walk(fn):
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and self_attr(c.func) and \
                        c.func.attr not in methods and any(isinstance(a, ast.Name) and a.id in returned
                                                           for a in c.args):
                    out.add(c.func.attr)
    return out


def _keep_call(c: ast.Call) -> bool:
    """``Keep(...)``, ``Keep.same_for_all_heads(...)``: the selection a hook returns."""
    f = c.func
    return isinstance(f, ast.Name) and f.id == "Keep" or isinstance(f, ast.Attribute) and isinstance(
        f.value, ast.Name) and f.value.id == "Keep"


def _reads_kept(defs: Defs, kept: set[str]) -> bool:
    """A selection hook returns a ranking kept on the module (``return Keep(self.sel)``, or a name bound from it):
    with a test on the layer index, one layer's selection serves others."""
    for hook in ("select", "on_decode"):
        for fn in defs.by_name.get(hook, []):
            aliases: set[str] = set()

            def reads(value: ast.AST, aliases: set[str] = aliases) -> bool:
                return any(isinstance(n, ast.Attribute) and self_attr(n) and n.attr in kept or
                           isinstance(n, ast.Name) and n.id in aliases for n in ast.walk(value))

            grew = True
            while grew:  # names made from the kept selection (pos = self.sel; idx = f(pos); out.append(idx))
                before = len(aliases)
                for node in ast.walk(fn):
                    if isinstance(node, ast.Assign) and any(
                            isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and reads(t.slice)
                            for t in node.targets):
                        # hit[loc] = True with loc found from the kept selection: the mask now marks it
                        aliases |= {t.value.id for t in node.targets if isinstance(t, ast.Subscript) and
                                    isinstance(t.value, ast.Name) and reads(t.slice)}
                    if isinstance(node, (ast.Assign, ast.AugAssign)) and reads(node.value):
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        aliases |= {t.id for t in targets if isinstance(t, ast.Name)}
                        aliases |= {e.id for t in targets if isinstance(t, (ast.Tuple, ast.List)) for e in t.elts
                                    if isinstance(e, ast.Name)}  # vals, counts = unique(cat([pos, kept]))
                        # score[h] = where(isin(pos, kept[h]), ...): the array now carries the kept selection
                        aliases |= {t.value.id for t in targets if isinstance(t, ast.Subscript) and
                                    isinstance(t.value, ast.Name)}
                    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                            node.func.attr in ("append", "extend") and isinstance(node.func.value, ast.Name) and \
                            any(reads(a) for a in node.args):
                        aliases.add(node.func.value.id)
                grew = len(aliases) > before
            for node in ast.walk(fn):
                if isinstance(node, ast.Return) and node.value is not None and reads(node.value):
                    return True
    return False


def _fitted_names(tree: ast.Module, schedules: set[int]) -> dict[str, set[str]]:
    """Names bound to fitted numbers before any hook runs (tagged W): module and class constants holding a literal
    table of them (not one only ``layer_budgets`` reads: ``_schedule_tables``), and ``self`` attributes set anywhere to
    one, to a trainable layer or to loaded weights."""
    def fitted(value: ast.expr) -> bool:
        return any(fitted_literal(n) or isinstance(n, ast.Call) and callee(n.func)[0] in LEARNED_CALLS
                   for n in ast.walk(value) if isinstance(n, ast.expr))

    out: dict[str, set[str]] = {}
    top = list(tree.body) + [s for c in tree.body if isinstance(c, ast.ClassDef) for s in c.body]
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None or not fitted(node.value) or \
                id(node.value) in schedules:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for tgt in targets:
            if isinstance(tgt, ast.Name) and node in top:
                out[tgt.id] = {"W"}
                out[f"self.{tgt.id}"] = {"W"}
            elif isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) and tgt.value.id == "self":
                out[f"self.{tgt.attr}"] = {"W"}
    return out


def _learned_table(tree: ast.Module, defs: Defs, schedules: set[int]) -> int | None:
    """Where the code carries fitted numbers: a literal table of at least four non-integer values (per-head
    importances, gate or scorer weights), or a trainable layer / loaded weights. Plain constants are not it, nor a
    table only ``layer_budgets`` reads (a hand-set schedule of the layers' budgets: ``layer_budget``'s business)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)) and id(node) not in schedules and not smoothing_window(node):
            vals = [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, float)]
            nested = [e for e in node.elts if isinstance(e, (ast.List, ast.Tuple))]
            if len(vals) >= 4 or (len(nested) >= 2 and all(
                    sum(isinstance(x, ast.Constant) and isinstance(x.value, float) for x in n.elts) >= 2
                    for n in nested)):
                return node.lineno
        if isinstance(node, ast.Call):
            name, _ = callee(node.func)
            if name in LEARNED_CALLS and name not in defs.by_name:
                return node.lineno
    return None


def _schedule_tables(tree: ast.Module) -> set[int]:
    """Literal tables bound to a name (a class attribute or a module constant) that only ``layer_budgets`` reads and
    whose values rise or fall monotonically: a schedule of the layers' budgets written by hand."""
    bound: dict[str, ast.expr] = {}
    scopes: list[ast.Module | ast.ClassDef] = [tree, *[n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]]
    for scope in scopes:
        for stmt in scope.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.List, ast.Tuple)):
                for t in stmt.targets:
                    if isinstance(t, ast.Name):
                        bound[t.id] = stmt.value
    readers: dict[str, set[str]] = {name: set() for name in bound}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            sized = {id(c.args[0]) for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                     and c.func.id == "len" and len(c.args) == 1}  # len(self.table): its size, none of its values
            for n in ast.walk(fn):
                name = n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else None
                if name in readers and isinstance(getattr(n, "ctx", None), ast.Load) and id(n) not in sized:
                    readers[name].add(fn.name)
    def monotone(table: ast.expr) -> bool:
        vals = [e.value for e in getattr(table, "elts", []) if isinstance(e, ast.Constant) and
                isinstance(e.value, (int, float))]
        pairs = list(zip(vals, vals[1:]))
        return bool(pairs) and (all(a >= b for a, b in pairs) or all(a <= b for a, b in pairs))

    # a shape written by hand rises or falls with depth; a searched or fitted table (EvolKV's) has no order
    return {id(bound[name]) for name, fns in readers.items() if fns == {"layer_budgets"} and monotone(bound[name])}


# keyword arguments that say where or how a result is made, not what it is computed from
_PLACEMENT_KEYWORDS = frozenset({"device", "dtype", "out", "generator", "layout", "requires_grad", "pin_memory"})


def _constant_test(tree: ast.Module) -> Callable[[ast.expr, frozenset[str]], bool]:
    """A test of whether an expression is fixed before any data is seen: literals, names of imports, the module's
    and classes' constants, ``self`` attributes the constructor sets (from its parameters: hyper-parameters) and no
    other method writes, a device or dtype, and arithmetic or calls of those. ``local`` names the enclosing
    function's constant locals. Anything else (a parameter, a size, a loop variable, the view) is data."""
    imported = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    written_elsewhere: set[str] = set()
    init_attrs: dict[str, list[ast.expr]] = {}
    init_params: set[str] = set()
    module_consts: dict[str, list[ast.expr]] = {}
    for scope in [tree] + [c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)]:
        for st in scope.body:
            if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                for t in (st.targets if isinstance(st, ast.Assign) else [st.target]):
                    if isinstance(t, ast.Name):
                        module_consts.setdefault(t.id, []).append(st.value)
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if fn.name == "__init__":
            init_params |= {a.arg for a in fn.args.args + fn.args.kwonlyargs if a.arg != "self"}
        for n in ast.walk(fn):
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(n, ast.Assign):
                targets, value = n.targets, n.value
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                targets, value = [n.target], n.value
            elif isinstance(n, (ast.For, ast.AsyncFor, ast.With, ast.comprehension)):
                targets = [n.target] if not isinstance(n, ast.With) else [i.optional_vars for i in n.items
                                                                          if i.optional_vars is not None]
            for t in targets:
                for e in ast.walk(t):
                    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
                        if fn.name == "__init__" and value is not None and t is e and not isinstance(n, ast.AugAssign):
                            init_attrs.setdefault(e.attr, []).append(value)
                        else:
                            written_elsewhere.add(e.attr)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("setattr", "vars"):
                written_elsewhere.add("*")

    def const(e: ast.expr | None, local: frozenset[str], names: frozenset[str] = frozenset()) -> bool:
        if e is None or isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.Name):
            if e.id in local or e.id in imported or e.id in names:
                return True
            vals = module_consts.get(e.id)
            return vals is not None and e.id not in names and all(const(v, local, names | {e.id}) for v in vals)
        if isinstance(e, ast.Attribute):
            if e.attr in ("device", "dtype"):
                return True
            if isinstance(e.value, ast.Name) and e.value.id == "self":
                vals = init_attrs.get(e.attr, []) + module_consts.get(e.attr, [])  # the constructor's, the class's
                return (bool(vals) and e.attr not in written_elsewhere and "*" not in written_elsewhere
                        and all(const(v, local | init_params, names) for v in vals))
            return const(e.value, local, names)
        if isinstance(e, ast.BinOp):
            return const(e.left, local, names) and const(e.right, local, names)
        if isinstance(e, ast.UnaryOp):
            return const(e.operand, local, names)
        if isinstance(e, (ast.BoolOp,)):
            return all(const(v, local, names) for v in e.values)
        if isinstance(e, ast.Compare):
            return const(e.left, local, names) and all(const(c, local, names) for c in e.comparators)
        if isinstance(e, ast.IfExp):
            return all(const(x, local, names) for x in (e.test, e.body, e.orelse))
        if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
            return all(const(x, local, names) for x in e.elts)
        if isinstance(e, ast.Call):
            return const(e.func, local, names) and all(const(a, local, names) for a in e.args) and all(
                k.arg in _PLACEMENT_KEYWORDS or const(k.value, local, names) for k in e.keywords)
        return False
    return const


def _constant_locals(fn: ast.FunctionDef | ast.AsyncFunctionDef,
                     const: Callable[[ast.expr, frozenset[str]], bool]) -> frozenset[str]:
    """The names of ``fn`` every assignment of which is constant (``_constant_test``), to a fixed point; a
    parameter, a loop or ``with`` target, an unpacking or a name bound by a nested scope is data."""
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
    if fn.args.vararg:
        params.add(fn.args.vararg.arg)
    if fn.args.kwarg:
        params.add(fn.args.kwarg.arg)
    values: dict[str, list[ast.expr]] = {}
    data: set[str] = set(params)
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    values.setdefault(t.id, []).append(n.value)
                else:
                    data |= {x.id for x in ast.walk(t) if isinstance(x, ast.Name)}
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)) and isinstance(n.target, ast.Name):
            if n.value is None:
                continue
            values.setdefault(n.target.id, []).append(n.value)
        elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
            data |= {x.id for x in ast.walk(n.target) if isinstance(x, ast.Name)}
        elif isinstance(n, ast.With):
            data |= {x.id for i in n.items if i.optional_vars is not None for x in ast.walk(i.optional_vars)
                     if isinstance(x, ast.Name)}
        elif isinstance(n, ast.NamedExpr):
            data.add(n.target.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and n is not fn:
            if isinstance(n, ast.Lambda):
                data |= {a.arg for a in n.args.args}
            else:
                data.add(n.name)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            data |= set(n.names)
    consts = frozenset(k for k in values if k not in data)
    changed = True
    while changed:  # drop a name any of whose values reads a name not (or no longer) constant
        changed = False
        keep = frozenset(k for k in consts if all(const(v, consts) for v in values[k]))
        if keep != consts:
            consts, changed = keep, True
    return consts


def called_names(source: str, data_only: frozenset[str] = frozenset()) -> set[str]:
    """The names of every function or method the code calls that it does not define itself (``torch.log``,
    ``x.var``, ``kmeans``...): what a loose reading of its operations sees, blind to the author's own names.
    A name in ``data_only`` counts only where some call of it reads data: ``torch.log(self.fade)`` of a
    hyper-parameter is a number fixed before any input is seen, no entropy of anything (``_constant_test``)."""
    tree = parse_source(source)
    if tree is None:
        return set()
    defs = Defs(tree)
    reads = self_attr_reads(tree)
    thrown: set[int] = set()  # calls computed and thrown away
    if reads is not None:  # None: attributes reached by name, nothing can be called thrown away
        for fn in (f for fns in defs.by_name.values() for f in fns):
            dead = dead_statements(fn, reads)
            thrown |= {id(c) for stmt in ast.walk(fn) if id(stmt) in dead for c in ast.walk(stmt)}
    out = set()
    constant: set[int] = set()  # calls of a ``data_only`` name that read nothing but constants
    const: Callable[[ast.expr, frozenset[str]], bool] | None = None
    for fn in (f for fns in defs.by_name.values() for f in fns) if data_only else ():
        calls = [c for c in ast.walk(fn) if isinstance(c, ast.Call) and callee(c.func)[0] in data_only]
        if not calls:
            continue  # (the module's constants and the function's locals are read only where such a call is)
        const = const or _constant_test(tree)
        local = _constant_locals(fn, const)
        constant |= {id(c) for c in calls if const(c, local)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in thrown and id(node) not in constant:
            name, _ = callee(node.func)
            if name and name not in defs.by_name and name not in defs.classes and not _head_axis_untouched(node):
                out.add(name)
    return out


def _head_axis_untouched(node: ast.Call) -> bool:
    """A copy along the tokens only (``x.repeat_interleave(16, dim=1)``, ``x.repeat(1, 4)``): each head's row
    stretched, none copied to the other heads, so no selection shared by the heads can come of it."""
    name, _ = callee(node.func)
    method = isinstance(node.func, ast.Attribute) and not (
        isinstance(node.func.value, ast.Name) and node.func.value.id == "torch")  # x.f(...), not torch.f(x, ...)
    if name == "repeat_interleave":
        dim = next((k.value for k in node.keywords if k.arg == "dim"), None)
        if dim is None:
            args = node.args if method else node.args[1:]
            dim = args[1] if len(args) > 1 else None
        d = const_int(dim)
        return d is not None and d not in (0, -3)
    if name == "repeat" and method and node.args and not node.keywords:
        return const_int(node.args[0]) == 1
    return False


def _pyramid(fn: ast.FunctionDef | ast.AsyncFunctionDef, found: dict[str, int], defs: Defs | None = None,
             layer_vars: set[str] | None = None, depth: int = 0) -> None:
    """A per-layer schedule that moves linearly with the layer index (an arithmetic progression), also when the
    layer index is handed to a helper of the module that does the arithmetic."""
    layer_vars = set(layer_vars or ())
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.comprehension)):
            it = node.iter
            if isinstance(it, ast.Call) and callee(it.func)[0] == "range" and isinstance(node.target, ast.Name):
                layer_vars.add(node.target.id)
    for node in ast.walk(fn):
        if defs is not None and depth < 3 and isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            for helper in defs.by_name.get(node.func.id, []):
                params = [a.arg for a in helper.args.args if a.arg not in ("self", "cls")]
                passed = {params[i] for i, a in enumerate(node.args[:len(params)])
                          if isinstance(a, ast.Name) and a.id in layer_vars}
                # the layer index handed over, or a helper that walks the layers itself (a loop over range)
                _pyramid(helper, found, defs, passed, depth + 1)
                if "pyramid" in found:
                    return
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Sub)):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if names & layer_vars:
                found.setdefault("pyramid", node.lineno)
                return
        if isinstance(node, ast.Call) and callee(node.func)[0] in ("linspace", "arange", "interp", "lerp") and \
                len(node.args) >= 2:
            # (np.interp(layers, [0, n - 1], [first, last]) and lerp: a straight line between two ends)
            found.setdefault("pyramid", node.lineno)
            return
        if isinstance(node, ast.Call) and callee(node.func)[0] in ("map", "starmap") and _affine_over_range(node):
            found.setdefault("pyramid", node.lineno)  # map(step.__mul__, range(n)): the layer index times a step
            return
        if isinstance(node, (ast.BinOp, ast.Call)) and _geometric(node, layer_vars):
            found.setdefault("pyramid", node.lineno)  # a ratio compounded layer by layer: a geometric schedule
            return


_AFFINE_DUNDERS = frozenset({"__mul__", "__rmul__", "__sub__", "__rsub__", "__add__", "__radd__", "__truediv__"})


def _affine_over_range(node: ast.Call) -> bool:
    """``map(f, range(n))`` (or ``starmap`` over pairs made with a range) where ``f`` multiplies, adds or subtracts: a
    bound arithmetic method (``step.__mul__``), ``operator.mul``/``sub``/``add`` or a lambda whose body does it; the
    layer index moved linearly."""
    if len(node.args) < 2 or not any(isinstance(x, ast.Call) and callee(x.func)[0] == "range"
                                     for a in node.args[1:] for x in ast.walk(a)):
        return False
    f = node.args[0]
    if isinstance(f, ast.Attribute) and f.attr in _AFFINE_DUNDERS | {"mul", "sub", "add", "truediv"}:
        return True
    if isinstance(f, ast.Name) and f.id in ("mul", "sub", "add"):
        return True
    return isinstance(f, ast.Lambda) and any(isinstance(x, ast.BinOp) and isinstance(x.op, (ast.Mult, ast.Sub, ast.Add))
                                             for x in ast.walk(f.body))


def _geometric(node: ast.AST, layer_vars: set[str]) -> bool:
    """A schedule that shrinks (or grows) by a ratio per layer: ``r ** layer``, a cumulative product
    (``cumprod``, ``itertools.accumulate(..., operator.mul)`` or a multiplying lambda)."""
    def over_layers(e: ast.expr) -> bool:
        # a layer index, or every layer's at once (arange / range over the layer count)
        return bool({n.id for n in ast.walk(e) if isinstance(n, ast.Name)} & layer_vars) or any(
            isinstance(c, ast.Call) and callee(c.func)[0] in ("arange", "range") for c in ast.walk(e))

    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return over_layers(node.right)
    if not isinstance(node, ast.Call):
        return False
    name = callee(node.func)[0]
    if name in ("pow", "float_power", "power"):
        # r.pow(arange(n)), torch.pow(r, arange(n)): the ratio raised to every layer's index
        exponent = node.args[1] if len(node.args) >= 2 else node.args[0] if node.args and isinstance(
            node.func, ast.Attribute) and not (isinstance(node.func.value, ast.Name) and
                                               node.func.value.id in ("torch", "np", "numpy", "math")) else None
        return exponent is not None and over_layers(exponent)
    if name == "cumprod":
        return True
    if name == "accumulate":
        for a in [*node.args[1:], *[k.value for k in node.keywords if k.arg == "func"]]:
            if isinstance(a, ast.Attribute) and a.attr == "mul" or isinstance(a, ast.Name) and a.id == "mul":
                return True
            if isinstance(a, ast.Lambda) and isinstance(a.body, ast.BinOp) and isinstance(a.body.op, ast.Mult):
                return True
    return False
