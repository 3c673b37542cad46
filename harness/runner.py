"""Runs methods on a board: prefill once per item, then every method and budget on a copy of the cache.

Board A: the question is in the prefill; compress after it, then answer. Board B (online/offline): prefill
the context alone, compress, then answer several questions, each on a copy of the compressed cache (no
re-prefill). Board C: generate with a per-layer cap, calling the method whenever a layer exceeds it.
The full cache runs on the same items and is the reference for every metric.
"""

from __future__ import annotations

import math
import signal
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch

from harness.api import EvictionMethod, Keep, LayerView, ModelInfo, Rewrite, reference_attention
from harness.kv import HOOK_NAME, KVRuntime, install_hook, use
from harness.tasks import Item, Question, score

BOARDS = ("A", "B_online", "B_offline", "C")
DECODE_QUERY_WINDOW_MAX = 4096  # board C hands over at most this many recent decode queries


class MethodError(Exception):
    """The method crashed, hung, overspent its budget or returned something malformed."""


class MethodTimeout(MethodError):
    pass


@dataclass
class MethodRun:
    """One method being evaluated: its instance, its per-layer state (board C), its first error if any."""

    name: str
    method: EvictionMethod
    error: str | None = None
    states: dict = field(default_factory=dict)

    @property
    def keeps_everything(self) -> bool:
        return bool(getattr(self.method, "keeps_everything", False))


@dataclass
class Row:
    item: str
    task: str
    question: int
    method: str
    budget: float
    score: float | None = None
    kl: float | None = None
    top1: float | None = None
    eviction_cost: float | None = None  # attention mass of future queries lost (fraction)
    eviction_cost_oracle: float | None = None  # the same for the best possible keep-set of the same size
    kept_tokens: float | None = None
    kv_bytes: int | None = None
    kv_bytes_peak: int | None = None
    compress_s: float | None = None
    offline_s: float | None = None  # B_offline: the one-off reconstruction pass, reported apart
    decode_tok_s: float | None = None
    generated_tokens: int | None = None
    prediction: str | None = None
    error: str | None = None


def _alarm(signum, frame):  # noqa: ARG001
    raise MethodTimeout("method call exceeded its time limit")


def guarded_call(fn: Callable, timeout_s: float, *args):
    """Call a method's hook under a time limit; its own exceptions become MethodError (reported, never fatal)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        return fn(*args)
    except MethodError:
        raise
    except Exception as e:
        raise MethodError(f"{type(e).__name__}: {e}") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def plain_rope_theta(cfg) -> float | None:
    """The RoPE base when the model uses unscaled, full-width RoPE (what ``LayerView.rotate`` implements)."""
    params = getattr(cfg, "rope_parameters", None) or {}
    kind = params.get("rope_type", "default") if isinstance(params, dict) else "default"
    scaling = getattr(cfg, "rope_scaling", None)
    if kind != "default" or (isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type")) not in
                             (None, "default")) or getattr(cfg, "partial_rotary_factor", 1.0) != 1.0:
        return None
    theta = params.get("rope_theta") if isinstance(params, dict) else None
    theta = theta or getattr(cfg, "rope_theta", None)
    return float(theta) if theta else None


class Engine:
    def __init__(self, loaded, call_timeout_s: float = 60.0) -> None:
        install_hook()
        self.lm = loaded
        self.model = loaded.model
        self.tok = loaded.tokenizer
        self.model.set_attn_implementation(HOOK_NAME)
        cfg = self.model.config
        self.info = ModelInfo(name=loaded.name, n_layers=cfg.num_hidden_layers, n_heads=cfg.num_attention_heads,
                              n_kv_heads=cfg.num_key_value_heads,
                              head_dim=getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads,
                              rope_theta=plain_rope_theta(cfg))
        self.call_timeout_s = call_timeout_s
        self.eos = {t for t in [self.tok.eos_token_id, self.tok.convert_tokens_to_ids("<|im_end|>")] if t is not None}

    # --- tokens -------------------------------------------------------------------------------------------
    def n_tokens(self, text: str) -> int:
        return len(self.tok(text, add_special_tokens=False)["input_ids"])

    def segments(self, item: Item, q: Question) -> tuple[list[int], list[int]]:
        """(context ids, question ids): the chat-formatted prompt cut right after the context."""
        user = f"{item.context}\n\n{q.text}" if item.context else q.text
        text = self.tok.apply_chat_template([{"role": "user", "content": user}], tokenize=False,
                                            add_generation_prompt=True)
        if q.answer_prefix:
            text += q.answer_prefix
        cut = text.find(item.context) + len(item.context) if item.context else text.find(q.text)
        enc = lambda s: self.tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
        return enc(text[:cut]), enc(text[cut:])

    # --- forward passes -------------------------------------------------------------------------------------
    @torch.no_grad()
    def forward(self, rt: KVRuntime, ids: list[int], start: int) -> torch.Tensor:
        """Logits (n, V) for ``ids`` at positions start.., extending ``rt``."""
        rt.positions = torch.arange(start, start + len(ids))
        with use(rt):
            out = self.model(input_ids=torch.tensor([ids]), position_ids=rt.positions[None], use_cache=False)
        rt.note_peak()
        return out.logits[0].float()

    def generate(self, rt: KVRuntime, first_logits: torch.Tensor, start: int, max_new: int,
                 on_step: Callable[[KVRuntime, int], None] | None = None) -> tuple[list[int], float]:
        """Greedy decoding; ``on_step`` runs after each appended token (board C eviction)."""
        out: list[int] = []
        logits = first_logits
        t0 = time.perf_counter()
        for i in range(max_new):
            nxt = int(logits.argmax())
            out.append(nxt)
            if nxt in self.eos or i == max_new - 1:
                break
            logits = self.forward(rt, [nxt], start + i)[-1]
            if on_step:
                on_step(rt, start + i + 1)
        return out, time.perf_counter() - t0

    # --- compression ------------------------------------------------------------------------------------------
    def view(self, rt: KVRuntime, layer: int, run: MethodRun, budget: int, board: str, phase: str,
             queries: tuple[torch.Tensor, torch.Tensor] | None) -> LayerView:
        k, v, pos, valid = rt.layers[layer].padded()
        q, qpos = queries if queries is not None else (None, None)
        return LayerView(layer=layer, keys=k, values=v, positions=pos, queries=q, budget=budget, board=board,
                         phase=phase, model=self.info, valid=valid, query_positions=qpos,
                         state=run.states.setdefault(layer, {}))

    def call(self, fn: Callable, *args):
        return guarded_call(fn, self.call_timeout_s, *args)

    def layer_budgets(self, run: MethodRun, mean_budget: int, n_tokens: int) -> list[int]:
        got = self.call(run.method.layer_budgets, mean_budget, n_tokens, self.info)
        if got is None:
            return [mean_budget] * self.info.n_layers
        if len(got) != self.info.n_layers or any(int(b) < 0 for b in got):
            raise MethodError(f"layer_budgets returned {len(got)} values, expected {self.info.n_layers} non-negative")
        if sum(int(b) for b in got) > mean_budget * self.info.n_layers:
            raise MethodError(f"layer_budgets sum {sum(got)} exceeds the total {mean_budget * self.info.n_layers}")
        return [int(b) for b in got]

    def compress(self, rt: KVRuntime, run: MethodRun, budgets: list[int], board: str, phase: str,
                 queries: Callable[[int], tuple[torch.Tensor, torch.Tensor] | None],
                 layers: list[int] | None = None) -> tuple[float, dict[int, list[torch.Tensor]]]:
        hook = run.method.on_decode if phase == "decode" else run.method.select
        kept: dict[int, list[torch.Tensor]] = {}
        t0 = time.perf_counter()
        for layer in layers if layers is not None else range(self.info.n_layers):
            view = self.view(rt, layer, run, budgets[layer], board, phase, queries(layer))
            result = self.call(hook, view)
            k = apply_result(rt, layer, result, budgets[layer])
            if k is not None:
                kept[layer] = k
        return time.perf_counter() - t0, kept


def apply_result(rt: KVRuntime, layer: int, result, budget: int) -> list[torch.Tensor] | None:
    """Validate a method's answer and really shrink the layer. Returns kept indices (None for Rewrite)."""
    heads = rt.layers[layer].heads
    h_kv = len(heads)
    if isinstance(result, Keep):
        if len(result.indices) != h_kv:
            raise MethodError(f"layer {layer}: Keep has {len(result.indices)} index sets for {h_kv} KV heads")
        kept = []
        for h, idx in enumerate(result.indices):
            if not isinstance(idx, torch.Tensor) or idx.dim() != 1 or idx.dtype not in (torch.int64, torch.int32):
                raise MethodError(f"layer {layer} head {h}: indices must be a 1-D integer tensor")
            if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= heads[h].n):
                raise MethodError(f"layer {layer} head {h}: index out of range 0..{heads[h].n - 1}")
            if torch.unique(idx).numel() != idx.numel():
                raise MethodError(f"layer {layer} head {h}: repeated indices")
            kept.append(idx.sort().values.long())
        total = sum(int(i.numel()) for i in kept)
        if total > budget * h_kv:
            raise MethodError(f"layer {layer}: keeps {total} entries, over the budget {budget} x {h_kv} heads")
        rt.layers[layer].keep(kept)
        return kept
    if isinstance(result, Rewrite):
        if not (len(result.keys) == len(result.values) == len(result.positions) == h_kv):
            raise MethodError(f"layer {layer}: Rewrite needs keys/values/positions for {h_kv} heads")
        total = sum(int(k.shape[0]) for k in result.keys)
        if total > budget * h_kv:
            raise MethodError(f"layer {layer}: rewrites to {total} entries, over the budget {budget} x {h_kv}")
        d = heads[0].k.shape[1]
        for k, v, p in zip(result.keys, result.values, result.positions):
            if k.dim() != 2 or k.shape[1] != d or v.shape != k.shape or p.shape != (k.shape[0],):
                raise MethodError(f"layer {layer}: Rewrite tensors must be (T', {d}) and positions (T',)")
        rt.layers[layer].replace(list(result.keys), list(result.values), list(result.positions))
        return None
    raise MethodError(f"layer {layer}: select returned {type(result).__name__}, expected Keep or Rewrite")


# --- metrics ------------------------------------------------------------------------------------------------------
def fidelity(ref: torch.Tensor, got: torch.Tensor) -> tuple[float, float]:
    """Mean KL(full || compressed) of next-token distributions, and top-1 agreement."""
    n = min(ref.shape[0], got.shape[0])
    if n == 0:
        return float("nan"), float("nan")
    lp, lq = ref[:n].log_softmax(-1), got[:n].log_softmax(-1)
    kl = (lp.exp() * (lp - lq)).sum(-1).clamp_min(0).mean()
    return float(kl), float((ref[:n].argmax(-1) == got[:n].argmax(-1)).float().mean())


def importance(rt_full: KVRuntime, future: dict[int, torch.Tensor], group: int) -> dict[int, torch.Tensor]:
    """Per layer (H_kv, T): attention mass that the future queries pay each cached key under the full
    cache, max over each KV head's query heads (KVP, arXiv 2602.10238)."""
    out = {}
    for layer, q in future.items():
        k, _, pos, valid = rt_full.layers[layer].padded()
        a = reference_attention(q, k, pos, None, group, valid)  # (H_q, F, T)
        out[layer] = a.sum(dim=1).reshape(k.shape[0], group, -1).max(dim=1).values
    return out


def eviction_cost(imp: dict[int, torch.Tensor], kept: dict[int, list[torch.Tensor]]) -> tuple[float, float]:
    """(lost mass fraction, the oracle's lost fraction at the same keep sizes), averaged over layers and heads."""
    lost, oracle = [], []
    for layer, idx in kept.items():
        if layer not in imp:
            continue
        for h, keep in enumerate(idx):
            i = imp[layer][h]
            total = float(i.sum()) or 1e-12
            mask = torch.ones_like(i, dtype=torch.bool)
            mask[keep] = False
            lost.append(float(i[mask].sum()) / total)
            n_evict = int(mask.sum())
            oracle.append(float(i.sort().values[:n_evict].sum()) / total)
    if not lost:
        return float("nan"), float("nan")
    return sum(lost) / len(lost), sum(oracle) / len(oracle)


def layer_budget(board_kind: str, budget: float, n_tokens: int) -> int:
    if board_kind == "fraction":
        return max(1, min(n_tokens, int(round(budget * n_tokens))))
    return max(1, int(budget))


# --- one item -----------------------------------------------------------------------------------------------------
def _needed_positions(runs: list[MethodRun], ctx_len: int, q_span: tuple[int, int] | None) -> torch.Tensor:
    w = max([int(getattr(r.method, "query_window", 0)) for r in runs] + [0])
    pos = set(range(max(0, ctx_len - w), ctx_len))
    if q_span and any(getattr(r.method, "question_queries", False) for r in runs):
        pos |= set(range(*q_span))
    return torch.tensor(sorted(pos), dtype=torch.long)


def _queries_for(rt0: KVRuntime, run: MethodRun, upto: int, q_span: tuple[int, int] | None, board: str):
    """The prefill queries this method asked for: its last-N window, plus the question span on board A."""
    w = int(getattr(run.method, "query_window", 0))
    want_q = bool(getattr(run.method, "question_queries", False)) and board == "A" and q_span is not None
    recorded = rt0.queries.prefill_positions
    if recorded is None or (w == 0 and not want_q):
        return lambda layer: None
    sel = (recorded >= upto - w) & (recorded < upto)
    if want_q:
        sel |= (recorded >= q_span[0]) & (recorded < q_span[1])
    positions = recorded[sel]

    def get(layer: int):
        q = rt0.queries.prefill.get(layer)
        return None if q is None or not positions.numel() else (q[:, sel], positions)

    return get


def _answer(eng: Engine, item: Item, q: Question, base: KVRuntime, n: int, query_aware: bool,
            last_logits: torch.Tensor) -> tuple[list[int], float, str, int]:
    """Answer one question greedily from a copy of ``base``: (tokens, seconds, text, peak KV bytes)."""
    rt = base.copy()
    rt.reset_peak()
    if query_aware:  # the question was in the prefill: its last logits start the answer
        first, start = last_logits, n
    else:
        _, qids = eng.segments(item, q)
        first, start = eng.forward(rt, qids, n)[-1], n + len(qids)
    gen, secs = eng.generate(rt, first, start, item.max_new_tokens)
    return gen, secs, eng.tok.decode(gen, skip_special_tokens=True), rt.peak_live


def _forced(eng: Engine, base: KVRuntime, tf_ids: list[int], n_answer: int, n: int, query_aware: bool,
            last_logits: torch.Tensor, record: bool = False) -> tuple[torch.Tensor, KVRuntime]:
    """Next-token logits for the reference answer's tokens, teacher-forced on a copy of ``base``
    (board B: after the question); ``record`` keeps the queries (the future queries of the KVP cost)."""
    rt = base.copy()
    rt.queries.record_all = record
    tf_logits = eng.forward(rt, tf_ids, n) if tf_ids else torch.empty(0)
    if query_aware:  # the prefill's last logits, then the forced ones
        return (torch.cat([last_logits[None], tf_logits[:-1]]) if n_answer > 1 else last_logits[None]), rt
    nq = len(tf_ids) - n_answer
    return (tf_logits[nq - 1 : -1] if n_answer else tf_logits[-1:]), rt


def run_prefill_item(eng: Engine, item: Item, runs: list[MethodRun], board: str, budget_kind: str,
                     budgets: list[float]) -> list[Row]:
    """Boards A and B."""
    rows: list[Row] = []
    query_aware = board == "A"
    questions = item.questions if not query_aware else item.questions[:1]
    if query_aware:
        ctx, qids = eng.segments(item, questions[0])
        prefill_ids, q_span = ctx + qids, (len(ctx), len(ctx) + len(qids))
    else:
        ctx, _ = eng.segments(item, questions[0])
        prefill_ids, q_span = ctx, None
    n = len(prefill_ids)
    rt0 = KVRuntime(eng.info.n_layers, eng.info.group_size)
    rt0.queries.prefill_positions = _needed_positions(runs, n, q_span)
    last_logits = eng.forward(rt0, prefill_ids, 0)[-1]
    full_bytes = rt0.live_bytes()

    # the full cache's answers, their logits and their queries (the "future" of the compression point)
    refs = []
    for qi, q in enumerate(questions):
        gen, secs, pred, peak = _answer(eng, item, q, rt0, n, query_aware, last_logits)
        tf_ids = (eng.segments(item, q)[1] if not query_aware else []) + gen
        ref_logits, rt_tf = _forced(eng, rt0, tf_ids, len(gen), n, query_aware, last_logits, record=True)
        future = {layer: torch.cat(qs, dim=1) for layer, qs in rt_tf.queries.all_queries.items()}
        refs.append((q, gen, ref_logits, importance(rt0, future, eng.info.group_size), tf_ids))
        rows.append(Row(item=item.id, task=item.task, question=qi, method="full", budget=1.0,
                        score=score(item, q, pred), kl=0.0, top1=1.0, eviction_cost=0.0, eviction_cost_oracle=0.0,
                        kept_tokens=float(n), kv_bytes=full_bytes, kv_bytes_peak=peak, compress_s=0.0,
                        decode_tok_s=len(gen) / secs if secs > 0 else None, generated_tokens=len(gen),
                        prediction=pred[:200]))

    for run in runs:
        if run.keeps_everything:
            continue
        for b in budgets:
            if run.error:
                rows.append(Row(item=item.id, task=item.task, question=0, method=run.name, budget=b, error=run.error))
                continue
            try:
                per_layer = eng.layer_budgets(run, layer_budget(budget_kind, b, n), n)
                rt_c = rt0.copy()
                run.states.clear()
                queries, offline_s = _queries_for(rt0, run, n, q_span, board), None
                if board == "B_offline" and getattr(run.method, "reconstruction_queries", False):
                    queries, offline_s = reconstruction_queries(eng, rt0, ctx, n)
                secs_c, kept = eng.compress(rt_c, run, per_layer, board, "prefill", queries)
            except MethodError as e:
                run.error = str(e)
                rows.append(Row(item=item.id, task=item.task, question=0, method=run.name, budget=b, error=run.error))
                continue
            comp_bytes = rt_c.live_bytes()
            kept_tokens = sum(sum(l.lengths()) for l in rt_c.layers) / (eng.info.n_layers * eng.info.n_kv_heads)
            for qi, (q, ref_gen, ref_logits, imp, tf_ids) in enumerate(refs):
                gen, secs, pred, peak = _answer(eng, item, q, rt_c, n, query_aware, last_logits)
                got, _ = _forced(eng, rt_c, tf_ids, len(ref_gen), n, query_aware, last_logits)
                kl, top1 = fidelity(ref_logits, got)
                lost, oracle = eviction_cost(imp, kept)
                rows.append(Row(item=item.id, task=item.task, question=qi, method=run.name, budget=b,
                                score=score(item, q, pred), kl=kl, top1=top1, eviction_cost=lost,
                                eviction_cost_oracle=oracle, kept_tokens=kept_tokens, kv_bytes=comp_bytes,
                                kv_bytes_peak=peak, compress_s=secs_c, offline_s=offline_s,
                                decode_tok_s=len(gen) / secs if secs > 0 else None, generated_tokens=len(gen),
                                prediction=pred[:200]))
    return rows


REPEAT_PROMPT = "\n\nRepeat the previous context exactly.\n"


def reconstruction_queries(eng: Engine, rt0: KVRuntime, ctx: list[int], n: int):
    """B_offline's one-off pass (KVzip, arXiv 2505.23416): the model re-reads the context after a "repeat"
    instruction on a copy of the full cache; the queries of that pass are handed to the method."""
    t0 = time.perf_counter()
    rt = rt0.copy()
    rt.queries.record_all = True
    ids = eng.tok(REPEAT_PROMPT, add_special_tokens=False)["input_ids"] + ctx
    eng.forward(rt, ids, n)
    qs = {layer: torch.cat(q, dim=1) for layer, q in rt.queries.all_queries.items()}
    positions = torch.arange(n, n + len(ids))
    return (lambda layer: (qs[layer], positions) if layer in qs else None), time.perf_counter() - t0


def run_decode_item(eng: Engine, item: Item, runs: list[MethodRun], caps: list[int], budgets: list[float]) -> list[Row]:
    """Board C: the full cache's greedy trace is teacher-forced through a capped cache, token by token."""
    q = item.questions[0]
    ctx, qids = eng.segments(item, q)
    prompt = ctx + qids
    n = len(prompt)
    rt0 = KVRuntime(eng.info.n_layers, eng.info.group_size)
    w = max([int(getattr(r.method, "query_window", 0)) for r in runs] + [0])
    rt0.queries.prefill_positions = torch.arange(max(0, n - w), n)
    last = eng.forward(rt0, prompt, 0)[-1]
    rt_full = rt0.copy()
    rt_full.queries.record_all = False
    trace, secs = eng.generate(rt_full, last, n, item.max_new_tokens)
    full_tok_s = len(trace) / secs if secs > 0 else None
    rt_ref = rt0.copy()
    ref_logits = torch.cat([last[None], eng.forward(rt_ref, trace[:-1], n)]) if len(trace) > 1 else last[None]
    rows = [Row(item=item.id, task=item.task, question=0, method="full", budget=0, kl=0.0, top1=1.0,
                kept_tokens=float(n + len(trace)), kv_bytes=rt_ref.live_bytes(), kv_bytes_peak=rt_ref.peak_live,
                compress_s=0.0, decode_tok_s=full_tok_s, generated_tokens=len(trace),
                prediction=eng.tok.decode(trace, skip_special_tokens=True)[:200])]
    for run in runs:
        if run.keeps_everything:
            continue
        for cap, b in zip(caps, budgets):
            if run.error:
                rows.append(Row(item=item.id, task=item.task, question=0, method=run.name, budget=b, error=run.error))
                continue
            rt = rt0.copy()
            rt.queries.window = min(int(getattr(run.method, "query_window", 0)), DECODE_QUERY_WINDOW_MAX)
            run.states.clear()
            try:
                per_layer = eng.layer_budgets(run, cap, n)
                comp = 0.0
                over = [i for i, layer in enumerate(rt.layers) if max(layer.lengths()) > per_layer[i]]
                if over:
                    s, _ = eng.compress(rt, run, per_layer, "C", "prefill", _queries_for(rt0, run, n, None, "C"), over)
                    comp += s
                rt.reset_peak()
                logits = [last[None]]
                t0 = time.perf_counter()
                for i, tok in enumerate(trace[:-1]):
                    logits.append(eng.forward(rt, [tok], n + i)[-1:])
                    over = [j for j, layer in enumerate(rt.layers) if max(layer.lengths()) > per_layer[j]]
                    if over:
                        s, _ = eng.compress(rt, run, per_layer, "C", "decode", rt.recent_queries, over)
                        comp += s
                secs = time.perf_counter() - t0
            except MethodError as e:
                run.error = str(e)
                rows.append(Row(item=item.id, task=item.task, question=0, method=run.name, budget=b, error=run.error))
                continue
            kl, top1 = fidelity(ref_logits, torch.cat(logits))
            rows.append(Row(item=item.id, task=item.task, question=0, method=run.name, budget=b, kl=kl, top1=top1,
                            kept_tokens=sum(sum(l.lengths()) for l in rt.layers) / (eng.info.n_layers * eng.info.n_kv_heads),
                            kv_bytes=rt.live_bytes(), kv_bytes_peak=rt.peak_live, compress_s=comp,
                            decode_tok_s=(len(trace) - 1) / secs if secs > 0 else None,
                            generated_tokens=len(trace)))
    return rows


def row_dict(r: Row) -> dict:
    d = asdict(r)
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}
