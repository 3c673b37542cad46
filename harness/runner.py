"""Runs methods on a board: prefill once per item, then every method and budget on a copy of the cache.

Board A: the question is in the prefill; compress after it, then answer. Board B (online/offline): prefill
the context alone, compress, then answer several questions, each on a copy of the compressed cache (no
re-prefill). Board C: decode with a hard per-layer cap: when a layer reaches its cap, the method is asked to evict a block
(the layer goes back to its cap minus an eighth), every layer at its cap in the same step in one call. The full cache runs on the same items and is the reference for every metric; what it did
(its answers, its next-token distributions, the attention its future queries pay each key) is kept as an
:class:`ItemReference`, which a later run on the same items reuses instead of recomputing.

Methods are :class:`harness.boundary.MethodHandle` objects: an untrusted one lives in its own sandboxed
process and only its Keep/Rewrite answers come back, validated here by :func:`apply_result`.
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from harness.alloc import return_freed_memory
from harness.api import Keep, LayerView, ModelInfo, Rewrite, reference_attention
from harness.arch import cache_kwarg, describe, plain_rope_theta  # noqa: F401  (plain_rope_theta re-exported)
from harness.boundary import MethodError, MethodHandle, MethodTimeout
from harness.kv import HOOK_NAME, KVRuntime, install_hook, state_cache, use
from harness.results import BOARDS, Row
from harness.tasks import Item, Question, score

__all__ = ["BOARDS", "Engine", "ItemReference", "MethodError", "MethodRun", "MethodTimeout", "QuestionReference",
           "apply_result", "eviction_cost", "fidelity", "layer_budget", "run_decode_item", "run_prefill_item"]

DECODE_QUERY_WINDOW_MAX = 4096  # board C hands over at most this many recent queries
DECODE_BLOCK_SHARE = 8  # board C: a layer at its cap evicts this share of it (one call per block of steps) ...
DECODE_BLOCK_MAX = 512  # ... but at most this many tokens (kvpress's DecodingPress compresses every 512 steps)
TOP_K = 128  # next-token log-probabilities kept per reference position (KL over the top-K and the tail)
BATCH_BYTES = 32 * 1024**2  # layer tensors handed to a method per round trip
PREFILL_CHUNK = 4096  # prompt tokens per forward pass: bounds prefill activations at long contexts


@dataclass
class MethodRun:
    """One method being evaluated: its handle and its first error, if any (a failed method stops there)."""

    name: str
    method: MethodHandle
    error: str | None = None

    @property
    def keeps_everything(self) -> bool:
        return self.method.attrs.keeps_everything


class Engine:
    def __init__(self, loaded: Any) -> None:
        install_hook()
        self.mmap_threshold = return_freed_memory()  # freed activations and caches leave the resident set
        self.lm = loaded
        self.model = loaded.model
        self.tok = loaded.tokenizer
        self.model.set_attn_implementation(HOOK_NAME)
        self.device = next(self.model.parameters()).device
        self.info: ModelInfo = describe(self.model, loaded.name)  # attention layers, RoPE, windows, from the model
        self.stateful = bool(self.info.recurrent_layers)  # hybrid: recurrent state travels in a transformers cache
        self.cache_kwarg = cache_kwarg(self.model)
        self.warned_length = False
        self.prefill_chunk = PREFILL_CHUNK
        self.param_bytes = sum(p.numel() * p.element_size() for p in self.model.parameters())
        self.eos = {t for t in [self.tok.eos_token_id, self.tok.convert_tokens_to_ids("<|im_end|>")] if t is not None}
        self.model_cpu_s = 0.0  # CPU seconds this process spent in forward passes (the overhead's denominator)
        self.tokens = 0  # tokens through the model so far (progress: tokens per second)

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

        def enc(s: str) -> list[int]:
            return list(self.tok(s, add_special_tokens=False)["input_ids"])

        return enc(text[:cut]), enc(text[cut:])

    # --- forward passes -------------------------------------------------------------------------------------
    @torch.no_grad()
    def forward(self, rt: KVRuntime, ids: list[int], start: int, last_only: bool = False) -> torch.Tensor:
        """Logits (n, V) for ``ids`` at positions start.., extending ``rt``; only the last row with
        ``last_only`` (a long prefill never holds T x vocabulary logits). A prompt longer than ``prefill_chunk``
        goes through in chunks (activations bounded by the chunk, the cache allocated once for the whole
        prompt): the same result as one pass, to float rounding."""
        chunk = self.prefill_chunk
        if not chunk or len(ids) <= chunk or any(not layer.empty for layer in rt.layers):
            return self._forward(rt, ids, start, last_only)
        rt.prefilling, rt.reserve = True, len(ids)
        try:
            parts = [self._forward(rt, ids[a: a + chunk], start + a, last_only)
                     for a in range(0, len(ids), chunk)]
        finally:
            rt.prefilling, rt.reserve = False, 0
        return parts[-1] if last_only else torch.cat(parts)

    def _forward(self, rt: KVRuntime, ids: list[int], start: int, last_only: bool) -> torch.Tensor:
        t0 = time.process_time()
        end = start + len(ids)
        if self.info.max_positions and end > self.info.max_positions and not self.warned_length:
            self.warned_length = True
            warnings.warn(f"{self.info.name}: {end} tokens exceed the {self.info.max_positions} positions the model "
                          "was trained for; its answers past them are not meaningful", stacklevel=2)
        rt.positions = torch.arange(start, end, device=self.device)
        kw: dict[str, Any] = {"use_cache": False}
        if self.stateful:  # the recurrent layers' state (the attention layers' KV stays in rt)
            if rt.state is None:
                if any(not layer.empty for layer in rt.layers):
                    raise ValueError("a hybrid model's cache lost its recurrent state (continue from a copy)")
                rt.state = state_cache(self.model)
            rt.state.seen = start
            kw = {"use_cache": True, self.cache_kwarg: rt.state}
        with use(rt):
            out = self.model(input_ids=torch.tensor([ids], device=self.device), position_ids=rt.positions[None],
                             logits_to_keep=1 if last_only else 0, **kw)
        rt.note_peak()
        logits = out.logits[0].float().cpu()
        self.model_cpu_s += time.process_time() - t0
        self.tokens += len(ids)
        return logits

    def generate(self, rt: KVRuntime, first_logits: torch.Tensor, start: int, max_new: int,
                 before_step: Callable[[KVRuntime, int], None] | None = None,
                 after_step: Callable[[KVRuntime], None] | None = None) -> tuple[list[int], float, float]:
        """Greedy decoding: (tokens, seconds, mean live KV bytes per decoded token). ``before_step`` runs before
        each forward (board C evicts there, so the cap is never exceeded), ``after_step`` after it."""
        out: list[int] = []
        logits = first_logits
        kv: list[int] = []
        t0 = time.perf_counter()
        for i in range(max_new):
            nxt = int(logits.argmax())
            out.append(nxt)
            if nxt in self.eos or i == max_new - 1:
                break
            if before_step:
                before_step(rt, start + i)
            logits = self.forward(rt, [nxt], start + i)[-1]
            kv.append(rt.live_bytes())
            if after_step:
                after_step(rt)
        return out, time.perf_counter() - t0, (sum(kv) / len(kv) if kv else float(rt.live_bytes()))

    # --- compression ------------------------------------------------------------------------------------------
    def view(self, rt: KVRuntime, layer: int, budget: int, board: str, phase: str,
             queries: tuple[torch.Tensor, torch.Tensor] | None, memo: dict | None = None) -> LayerView:
        """The method's view of one layer. ``memo`` (trusted references on an unevicted full cache only:
        ``harness.memo``) shares the attention of the same queries over the same keys between calls."""
        k, v, pos, valid = rt.layers[layer].padded()
        q, qpos = queries if queries is not None else (None, None)
        qpos = qpos.to(k.device) if qpos is not None else None  # a view's tensors all live where its keys do
        args: dict[str, Any] = dict(layer=layer, keys=k, values=v, positions=pos, queries=q, budget=budget,
                                    board=board, phase=phase, model=self.info, valid=valid, query_positions=qpos)
        if memo is None or qpos is None:
            return LayerView(**args)
        from harness.memo import MemoView

        return MemoView(**args, memo=memo, source=hashlib.sha256(qpos.cpu().numpy().tobytes()).hexdigest())

    def layer_budgets(self, run: MethodRun, mean_budget: int, n_tokens: int, cap: int | None = None) -> list[int]:
        """Per-layer budgets indexed by layer (0 for layers without a KV cache). A method allocates over the
        attention layers (one value each, in ``ModelInfo.attention_layers`` order); one value per layer is
        also accepted (the interface before hybrid models), and only the attention layers' values count.

        With ``cap`` (board C) the cap is per layer, not a mean over layers: a method is budgeted from the cap
        (``n_tokens`` is the cap, the most a layer may ever hold, not the prompt's length) and an allocation
        that gives any layer more than the cap is refused."""
        attn = self.info.attention_layers
        if cap is not None:
            mean_budget = n_tokens = cap
        got = run.method.layer_budgets(mean_budget, n_tokens, self.info)
        out = [0] * self.info.n_layers
        if got is None:
            for i in attn:
                out[i] = mean_budget
            return out
        if len(got) == self.info.n_layers and len(got) != len(attn):
            got = [got[i] for i in attn]
        if len(got) != len(attn) or any(int(b) < 0 for b in got):
            raise MethodError(f"layer_budgets returned {len(got)} values, expected {len(attn)} non-negative "
                              "(one per attention layer)")
        if cap is not None:
            over = [(i, int(b)) for i, b in zip(attn, got) if int(b) > cap]
            if over:
                raise MethodError(f"layer_budgets gives layer {over[0][0]} {over[0][1]} tokens, over the per-layer cap "
                                  f"{cap} ({len(over)} layer{'s' if len(over) > 1 else ''} over)")
            empty = next((i for i, b in zip(attn, got) if int(b) < 1), None)
            if empty is not None:  # the token being decoded is in every layer while it attends
                raise MethodError(f"layer_budgets gives layer {empty} no tokens: while decoding every layer holds at "
                                  "least the current token")
        if sum(int(b) for b in got) > mean_budget * len(attn):
            raise MethodError(f"layer_budgets sum {sum(got)} exceeds the total {mean_budget * len(attn)}")
        for i, b in zip(attn, got):
            out[i] = int(b)
        return out

    def compress(self, rt: KVRuntime, run: MethodRun, budgets: list[int], board: str, phase: str,
                 queries: Callable[[int], tuple[torch.Tensor, torch.Tensor] | None],
                 layers: list[int] | None = None, per_head: bool = False,
                 memo: dict | None = None) -> tuple[float, float, dict[int, list[torch.Tensor]]]:
        """(wall seconds, the method's CPU seconds, kept indices per layer) of one compression. Layers go to the
        method in batches of up to ``BATCH_BYTES`` of tensors: one round trip across the trust boundary each."""
        op = "on_decode" if phase == "decode" else "select"
        kept: dict[int, list[torch.Tensor]] = {}
        cpu0 = run.method.cpu_seconds()
        t0 = time.perf_counter()
        batch: list[LayerView] = []
        size = 0

        def flush() -> None:
            nonlocal size
            for view, result in zip(batch, run.method.call_layers(op, batch)):
                k = apply_result(rt, view.layer, result, budgets[view.layer], per_head)
                if k is not None:
                    kept[view.layer] = k
            batch.clear()
            size = 0

        for layer in layers if layers is not None else self.info.attention_layers:
            view = self.view(rt, layer, budgets[layer], board, phase, queries(layer), memo)
            bytes_ = sum(t.numel() * t.element_size() for t in (view.keys, view.values, view.queries) if t is not None)
            if batch and size + bytes_ > BATCH_BYTES:
                flush()
            batch.append(view)
            size += bytes_
        if batch:
            flush()
        return time.perf_counter() - t0, run.method.cpu_seconds() - cpu0, kept


def apply_result(rt: KVRuntime, layer: int, result: object, budget: int,
                 per_head: bool = False) -> list[torch.Tensor] | None:
    """Validate a method's answer and really shrink the layer. Returns kept indices (None for Rewrite).
    ``budget`` bounds the layer's entries (``budget`` x its KV heads); with ``per_head`` each head's too."""
    heads = rt.layers[layer].heads
    h_kv = len(heads)
    if isinstance(result, Keep):
        if len(result.indices) != h_kv:
            raise MethodError(f"layer {layer}: Keep has {len(result.indices)} index sets for {h_kv} KV heads")
        kept = []
        for h, idx in enumerate(result.indices):
            if not isinstance(idx, torch.Tensor) or idx.dim() != 1 or idx.dtype not in (torch.int64, torch.int32):
                raise MethodError(f"layer {layer} head {h}: indices must be a 1-D integer tensor")
            if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= heads[h].length):
                raise MethodError(f"layer {layer} head {h}: index out of range 0..{heads[h].length - 1}")
            if torch.unique(idx).numel() != idx.numel():
                raise MethodError(f"layer {layer} head {h}: repeated indices")
            kept.append(idx.sort().values.long())
        total = sum(int(i.numel()) for i in kept)
        _check_heads(layer, [int(i.numel()) for i in kept], budget, per_head)
        if total > budget * h_kv:
            raise MethodError(f"layer {layer}: keeps {total} entries, over the budget {budget} x {h_kv} heads")
        rt.layers[layer].keep(kept)
        return kept
    if isinstance(result, Rewrite):
        if not (len(result.keys) == len(result.values) == len(result.positions) == h_kv):
            raise MethodError(f"layer {layer}: Rewrite needs keys/values/positions for {h_kv} heads")
        total = sum(int(k.shape[0]) for k in result.keys)
        _check_heads(layer, [int(k.shape[0]) for k in result.keys], budget, per_head)
        if total > budget * h_kv:
            raise MethodError(f"layer {layer}: rewrites to {total} entries, over the budget {budget} x {h_kv}")
        d = heads[0].k.shape[1]
        for k, v, p in zip(result.keys, result.values, result.positions):
            if k.dim() != 2 or k.shape[1] != d or v.shape != k.shape or p.shape != (k.shape[0],):
                raise MethodError(f"layer {layer}: Rewrite tensors must be (T', {d}) and positions (T',)")
            if not (bool(torch.isfinite(k).all()) and bool(torch.isfinite(v).all())):
                raise MethodError(f"layer {layer}: Rewrite keys/values must be finite")
            if p.numel() and int(p.min()) < 0:
                raise MethodError(f"layer {layer}: Rewrite positions must be non-negative")
        rt.layers[layer].replace([k.to(heads[0].k.dtype) for k in result.keys],
                                 [v.to(heads[0].v.dtype) for v in result.values],
                                 list(result.positions))
        return None
    raise MethodError(f"layer {layer}: select returned {type(result).__name__}, expected Keep or Rewrite")


def _check_heads(layer: int, lengths: list[int], budget: int, per_head: bool) -> None:
    if per_head and lengths and max(lengths) > budget:
        h = lengths.index(max(lengths))
        raise MethodError(f"layer {layer} head {h}: keeps {lengths[h]} entries, over the per-head cap {budget}")


# --- metrics ------------------------------------------------------------------------------------------------------
def top_k(logits: torch.Tensor, k: int = TOP_K) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, log-probabilities) of the ``k`` most likely next tokens per row, most likely first."""
    lp = logits.float().log_softmax(-1)
    vals, ids = lp.topk(min(k, lp.shape[-1]), dim=-1)
    return ids, vals


def fidelity(ref_ids: torch.Tensor, ref_logp: torch.Tensor, got: torch.Tensor) -> tuple[float, float]:
    """KL(full || compressed) and top-1 agreement against the full cache's top-K next-token distributions.

    The KL is between the two distributions coarse-grained to the reference's top-K tokens plus one bucket for
    everything else (a lower bound of the full-vocabulary KL, exact when the tail is empty): what the reference
    stores instead of a T x vocabulary matrix.
    """
    n = min(ref_ids.shape[0], got.shape[0])
    if n == 0:
        return float("nan"), float("nan")
    lq = got[:n].float().log_softmax(-1)
    p = ref_logp[:n].exp()
    q = lq.gather(-1, ref_ids[:n]).exp()
    p_tail = (1 - p.sum(-1)).clamp_min(0)
    q_tail = (1 - q.sum(-1)).clamp_min(1e-12)
    head = (p * (ref_logp[:n] - q.clamp_min(1e-30).log())).sum(-1)
    tail = torch.where(p_tail > 0, p_tail * (p_tail.clamp_min(1e-30).log() - q_tail.log()), torch.zeros_like(p_tail))
    kl = (head + tail).clamp_min(0).mean()
    top1 = (got[:n].argmax(-1) == ref_ids[:n, 0]).float().mean()
    return float(kl), float(top1)


def importance(rt_full: KVRuntime, future: dict[int, torch.Tensor], group: int,
               scale: float | None = None) -> dict[int, torch.Tensor]:
    """Per layer (H_kv, T): attention mass that the future queries pay each cached key under the full
    cache, max over each KV head's query heads (KVP, arXiv 2602.10238). Summed chunk by chunk: never F x T."""
    out = {}
    for layer, q in future.items():
        k, _, pos, valid = rt_full.layers[layer].padded()
        a = reference_attention(q, k, pos, None, group, valid, scale=scale, reduce="sum")  # (H_q, T)
        out[layer] = a.reshape(k.shape[0], group, -1).max(dim=1).values.cpu()
    return out


def eviction_cost(imp: dict[int, torch.Tensor], kept: dict[int, list[torch.Tensor]]) -> tuple[float, float]:
    """(lost mass fraction, the oracle's lost fraction at the same keep sizes), averaged over layers and heads."""
    lost, oracle = [], []
    for layer, idx in kept.items():
        if layer not in imp:
            continue
        for h, keep in enumerate(idx):
            i = imp[layer][h].float()
            total = float(i.sum()) or 1e-12
            mask = torch.ones_like(i, dtype=torch.bool)
            mask[keep.to(mask.device)] = False
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


def _layer_tokens(layer: Any) -> int:
    """Tokens a layer holds per KV head (ragged heads: their mean, rounded up): what a cap limits."""
    lengths = layer.lengths()
    return -(-sum(lengths) // len(lengths)) if lengths else 0


def _max_tokens(rt: KVRuntime) -> int:
    return max((_layer_tokens(layer) for layer in rt.layers), default=0)


# --- the full cache's reference -------------------------------------------------------------------------------------
@dataclass
class QuestionReference:
    """What the full cache did on one question: its row, answer, top-K next-token distributions along the
    answer (teacher-forced) and the attention its future queries pay each key (the eviction cost's weights)."""

    row: Row
    gen: list[int]
    tf_ids: list[int]
    top_ids: torch.Tensor  # (n_answer, K) int64
    top_logp: torch.Tensor  # (n_answer, K) float32
    importance: dict[int, torch.Tensor] = field(default_factory=dict)  # layer -> (H_kv, T) float16

    def state(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"row": asdict(self.row), "gen": self.gen, "tf_ids": self.tf_ids, "top_ids": self.top_ids,
                "top_logp": self.top_logp, "importance": {str(k): v for k, v in self.importance.items()}}

    @staticmethod
    def from_state(s: dict[str, Any]) -> "QuestionReference":
        return QuestionReference(row=Row(**s["row"]), gen=list(s["gen"]), tf_ids=list(s["tf_ids"]),
                                 top_ids=s["top_ids"], top_logp=s["top_logp"],
                                 importance={int(k): v for k, v in s["importance"].items()})


@dataclass
class ItemReference:
    item: str
    n_prompt: int  # tokens prefilled (checks that a reused reference belongs to the same prompt)
    questions: list[QuestionReference]

    def state(self) -> dict[str, Any]:
        return {"item": self.item, "n_prompt": self.n_prompt, "questions": [q.state() for q in self.questions]}

    @staticmethod
    def from_state(s: dict[str, Any]) -> "ItemReference":
        return ItemReference(item=s["item"], n_prompt=int(s["n_prompt"]),
                             questions=[QuestionReference.from_state(q) for q in s["questions"]])


# --- one item -----------------------------------------------------------------------------------------------------
def _needed_positions(runs: list[MethodRun], ctx_len: int, q_span: tuple[int, int] | None) -> torch.Tensor:
    w = max([r.method.attrs.query_window for r in runs] + [0])
    pos = set(range(max(0, ctx_len - w), ctx_len))
    if q_span and any(r.method.attrs.question_queries for r in runs):
        pos |= set(range(*q_span))
    return torch.tensor(sorted(pos), dtype=torch.long)


QueryFn = Callable[[int], "tuple[torch.Tensor, torch.Tensor] | None"]


def _queries_for(rt0: KVRuntime, run: MethodRun, upto: int, q_span: tuple[int, int] | None, board: str) -> QueryFn:
    """The prefill queries this method asked for: its last-N window, plus the question span on board A."""
    w = run.method.attrs.query_window
    want_q = run.method.attrs.question_queries and board == "A" and q_span is not None
    recorded = rt0.queries.prefill_positions
    if recorded is None or (w == 0 and not want_q):
        return lambda layer: None
    sel = (recorded >= upto - w) & (recorded < upto)
    if want_q and q_span is not None:
        sel |= (recorded >= q_span[0]) & (recorded < q_span[1])
    positions = recorded[sel]

    def get(layer: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        q = rt0.queries.prefill.get(layer)
        return None if q is None or not positions.numel() else (q[:, sel], positions)

    return get


@dataclass
class Answer:
    gen: list[int]
    seconds: float
    text: str
    peak: int
    kv_mean: float
    model_cpu_s: float


def _answer(eng: Engine, item: Item, q: Question, base: KVRuntime, n: int, query_aware: bool,
            last_logits: torch.Tensor) -> Answer:
    """Answer one question greedily from a copy of ``base``."""
    rt = base.copy()
    rt.reset_peak()
    cpu0 = eng.model_cpu_s
    if query_aware:  # the question was in the prefill: its last logits start the answer
        first, start = last_logits, n
    else:
        _, qids = eng.segments(item, q)
        first, start = eng.forward(rt, qids, n, last_only=True)[-1], n + len(qids)
    gen, secs, kv_mean = eng.generate(rt, first, start, item.max_new_tokens)
    rt.release()  # its rows past ``base`` are free for the next copy (no second copy of the prompt's cache)
    return Answer(gen, secs, eng.tok.decode(gen, skip_special_tokens=True), rt.peak_live, kv_mean,
                  eng.model_cpu_s - cpu0)


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
    return (tf_logits[nq - 1: -1] if n_answer else tf_logits[-1:]), rt


def prefill_reference(eng: Engine, item: Item, questions: list[Question], rt0: KVRuntime, n: int,
                      query_aware: bool, last_logits: torch.Tensor, prefill_cpu: float) -> ItemReference:
    refs = []
    full_bytes = rt0.live_bytes()
    for qi, q in enumerate(questions):
        a = _answer(eng, item, q, rt0, n, query_aware, last_logits)
        tf_ids = (eng.segments(item, q)[1] if not query_aware else []) + a.gen
        ref_logits, rt_tf = _forced(eng, rt0, tf_ids, len(a.gen), n, query_aware, last_logits, record=True)
        ids, logp = top_k(ref_logits)
        future = {layer: torch.cat(qs, dim=1) for layer, qs in rt_tf.queries.all_queries.items()}
        imp = {k: v.half() for k, v in importance(rt0, future, eng.info.group_size, eng.info.scale).items()}
        rt_tf.release()
        row = Row(item=item.id, task=item.task, question=qi, method="full", budget=1.0,
                  score=score(item, q, a.text), kl=0.0, top1=1.0, eviction_cost=0.0, eviction_cost_oracle=0.0,
                  kept_tokens=float(n), kv_bytes=full_bytes, kv_bytes_peak=a.peak, kv_bytes_decode_mean=a.kv_mean,
                  kv_tokens_layer_max=_max_tokens(rt0), model_cpu_s=prefill_cpu + a.model_cpu_s, compress_s=0.0,
                  compress_cpu_s=0.0, decode_tok_s=len(a.gen) / a.seconds if a.seconds > 0 else None,
                  generated_tokens=len(a.gen), prediction=a.text[:200])
        refs.append(QuestionReference(row=row, gen=a.gen, tf_ids=tf_ids, top_ids=ids, top_logp=logp, importance=imp))
    return ItemReference(item=item.id, n_prompt=n, questions=refs)


def _error_row(item: Item, run: MethodRun, b: float) -> Row:
    return Row(item=item.id, task=item.task, question=0, method=run.name, budget=b, error=run.error)


def run_prefill_item(eng: Engine, item: Item, runs: list[MethodRun], board: str, budget_kind: str,
                     budgets: list[float], reference: ItemReference | None = None,
                     record: Any = None) -> tuple[list[Row], ItemReference]:
    """Boards A and B. Returns the rows (the full cache's first) and the item's reference. ``record`` (a
    ``harness.keptsets.KeptRecorder``) keeps what each method kept after its compression, and runs the
    baselines' compressions on the same full cache."""
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
    rt0.queries.prefill_positions = _needed_positions(runs + (record.extra_runs if record else []), n, q_span)
    cpu0 = eng.model_cpu_s
    last_logits = eng.forward(rt0, prefill_ids, 0, last_only=True)[-1]
    prefill_cpu = eng.model_cpu_s - cpu0
    if reference is None or reference.n_prompt != n or len(reference.questions) != len(questions):
        reference = prefill_reference(eng, item, questions, rt0, n, query_aware, last_logits, prefill_cpu)
    if record is not None:
        record.baseline_calls(eng, item.id, rt0, n, q_span, board, ctx)
    rows: list[Row] = [qr.row for qr in reference.questions]

    for run in runs:
        if run.keeps_everything:
            continue
        for b in budgets:
            if run.error:
                rows.append(_error_row(item, run, b))
                continue
            try:
                per_layer = eng.layer_budgets(run, layer_budget(budget_kind, b, n), n)
                rt_c = rt0.copy()
                run.method.reset()
                queries, offline_s = _queries_for(rt0, run, n, q_span, board), None
                if board == "B_offline" and run.method.attrs.reconstruction_queries:
                    queries, offline_s = reconstruction_queries(eng, rt0, ctx, n)
                secs_c, cpu_c, kept = eng.compress(rt_c, run, per_layer, board, "prefill", queries)
                if record is not None:
                    record.method(item.id, run.name, run.method.code_hash, b, rt_c, n)
            except MethodError as e:
                run.error = str(e)
                rows.append(_error_row(item, run, b))
                continue
            comp_bytes = rt_c.live_bytes()
            kept_tokens = sum(sum(x.lengths()) for x in rt_c.layers) / (len(eng.info.attention_layers) * eng.info.n_kv_heads)
            for qi, (q, qref) in enumerate(zip(questions, reference.questions)):
                a = _answer(eng, item, q, rt_c, n, query_aware, last_logits)
                got, rt_f = _forced(eng, rt_c, qref.tf_ids, len(qref.gen), n, query_aware, last_logits)
                rt_f.release()
                kl, top1 = fidelity(qref.top_ids, qref.top_logp, got)
                lost, oracle = eviction_cost(qref.importance, kept)
                rows.append(Row(item=item.id, task=item.task, question=qi, method=run.name, budget=b,
                                score=score(item, q, a.text), kl=kl, top1=top1, eviction_cost=lost,
                                eviction_cost_oracle=oracle, kept_tokens=kept_tokens, kv_bytes=comp_bytes,
                                kv_bytes_peak=a.peak, kv_bytes_decode_mean=a.kv_mean,
                                kv_tokens_layer_max=_max_tokens(rt_c), model_cpu_s=prefill_cpu + a.model_cpu_s,
                                compress_s=secs_c, compress_cpu_s=cpu_c, offline_s=offline_s,
                                decode_tok_s=len(a.gen) / a.seconds if a.seconds > 0 else None,
                                generated_tokens=len(a.gen), prediction=a.text[:200]))
    return rows, reference


REPEAT_PROMPT = "\n\nRepeat the previous context exactly.\n"


def reconstruction_queries(eng: Engine, rt0: KVRuntime, ctx: list[int], n: int) -> tuple[QueryFn, float]:
    """B_offline's one-off pass (KVzip, arXiv 2505.23416): the model re-reads the context after a "repeat"
    instruction on a copy of the full cache; the queries of that pass are handed to the method."""
    t0 = time.perf_counter()
    rt = rt0.copy()
    rt.queries.record_all = True
    ids = eng.tok(REPEAT_PROMPT, add_special_tokens=False)["input_ids"] + ctx
    eng.forward(rt, ids, n, last_only=True)
    qs = {layer: torch.cat(q, dim=1) for layer, q in rt.queries.all_queries.items()}
    rt.release()
    positions = torch.arange(n, n + len(ids))
    return (lambda layer: (qs[layer], positions) if layer in qs else None), time.perf_counter() - t0


def decode_reference(eng: Engine, item: Item, rt0: KVRuntime, n: int, last: torch.Tensor,
                     prefill_cpu: float) -> ItemReference:
    """Board C's full cache: its greedy trace (free generation: the answer is scored where the task has a
    metric), and its top-K distributions along the trace (teacher-forced)."""
    q = item.questions[0]
    rt_full = rt0.copy()
    rt_full.reset_peak()
    cpu0 = eng.model_cpu_s
    trace, secs, kv_mean = eng.generate(rt_full, last, n, item.max_new_tokens)
    gen_cpu = eng.model_cpu_s - cpu0
    rt_ref = rt0.copy()
    ref_logits = torch.cat([last[None], eng.forward(rt_ref, trace[:-1], n)]) if len(trace) > 1 else last[None]
    ids, logp = top_k(ref_logits)
    text = eng.tok.decode(trace, skip_special_tokens=True)
    row = Row(item=item.id, task=item.task, question=0, method="full", budget=0,
              score=score(item, q, text) if item.metric != "fidelity" else None, kl=0.0, top1=1.0,
              kept_tokens=float(n + len(trace)), kv_bytes=rt_ref.live_bytes(), kv_bytes_peak=rt_full.peak_live,
              kv_bytes_decode_mean=kv_mean, kv_tokens_layer_max=_max_tokens(rt_full),
              model_cpu_s=prefill_cpu + gen_cpu, compress_s=0.0, compress_cpu_s=0.0,
              decode_tok_s=len(trace) / secs if secs > 0 else None, generated_tokens=len(trace),
              prediction=text[:200])
    return ItemReference(item=item.id, n_prompt=n, questions=[
        QuestionReference(row=row, gen=trace, tf_ids=trace, top_ids=ids, top_logp=logp)])


def decode_block(budget: int) -> int:
    """Tokens a layer at its cap gives back in one eviction: an eighth of its budget (1 to 512). The method is asked
    once per block of decoded tokens instead of before every token (a round trip per token, each waiting for a
    busy core, made board C 30x slower beside other work), as the seed's decode-time methods evict "when the
    cache budget is filled" (R-KV every 128 tokens, kvpress's DecodingPress every 512)."""
    return max(1, min(DECODE_BLOCK_MAX, budget // DECODE_BLOCK_SHARE))


def _held(layer: Any, per_head: bool) -> int:
    """What a cap limits: a layer's tokens per KV head (the mean over its heads, rounded up: its memory) or, where
    the cap is per head, its longest head."""
    lengths = layer.lengths()
    if not lengths:
        return 0
    return max(lengths) if per_head else -(-sum(lengths) // len(lengths))


def run_decode_item(eng: Engine, item: Item, runs: list[MethodRun], caps: list[int], budgets: list[float],
                    reference: ItemReference | None = None, per_head: bool = False) -> tuple[list[Row], ItemReference]:
    """Board C. Fidelity items (``metric == "fidelity"``): the full cache's trace is teacher-forced through the
    capped cache, token by token. Scored items (MATH-500): the capped cache generates freely and its answer is
    scored, with its length. Either way no layer ever holds more than its cap (``per_head``: no head), at any step.

    A layer that would pass its budget (at most the cap) with the next token first evicts a block
    (:func:`decode_block`): the method sees it with ``budget`` = its cap minus the block; every layer due at the
    same step goes in one call. Between calls the method's state stays in its own process (``view.state``), and
    ``view.queries`` holds the newest ``query_window`` queries (at most 4,096; the prompt's, then the decoded
    tokens'), so the queries since its last call are all there for methods that accumulate per step."""
    q = item.questions[0]
    ctx, qids = eng.segments(item, q)
    prompt = ctx + qids
    n = len(prompt)
    rt0 = KVRuntime(eng.info.n_layers, eng.info.group_size)
    w = max([r.method.attrs.query_window for r in runs] + [0])
    rt0.queries.prefill_positions = torch.arange(max(0, n - w), n)
    cpu0 = eng.model_cpu_s
    last = eng.forward(rt0, prompt, 0, last_only=True)[-1]
    prefill_cpu = eng.model_cpu_s - cpu0
    if reference is None or reference.n_prompt != n:
        reference = decode_reference(eng, item, rt0, n, last, prefill_cpu)
    qref = reference.questions[0]
    trace = qref.gen
    rows: list[Row] = [qref.row]
    forced = item.metric == "fidelity"
    attn = eng.info.attention_layers
    for run in runs:
        if run.keeps_everything:
            continue
        for cap, b in zip(caps, budgets):
            if run.error:
                rows.append(_error_row(item, run, b))
                continue
            rt = rt0.copy()
            rt.queries.window = min(run.method.attrs.query_window, DECODE_QUERY_WINDOW_MAX)
            run.method.reset()
            comp = [0.0, 0.0]
            peak_tokens = [0]

            def evict_ahead(rt_: KVRuntime, pos: int, per_layer: list[int], targets: list[int]) -> None:
                """Before a step: every layer that would pass its budget with one more token evicts a block."""
                due = [j for j in attn if _held(rt_.layers[j], per_head) + 1 > per_layer[j]]
                if due:
                    s, c, _ = eng.compress(rt_, run, targets, "C", "decode", rt_.recent_queries, due, per_head)
                    comp[0] += s
                    comp[1] += c

            def after(rt_: KVRuntime, per_layer: list[int]) -> None:
                """After a step: the cap held in every layer (the engine's own guarantee, checked every step)."""
                held = [_held(rt_.layers[j], per_head) for j in attn]
                bad = next(((j, h) for j, h in zip(attn, held) if h > per_layer[j]), None)
                if bad is not None:
                    raise RuntimeError(f"layer {bad[0]} holds {bad[1]} tokens, over its budget {per_layer[bad[0]]}")
                peak_tokens[0] = max([peak_tokens[0], *held])

            try:
                per_layer = eng.layer_budgets(run, cap, n, cap=cap)
                targets = [max(0, x - decode_block(x)) if x else 0 for x in per_layer]
                over = [i for i in attn if _held(rt.layers[i], per_head) > targets[i]]
                if over:  # the prompt alone fills the cap: evict to the decode level before the first step
                    s, c, _ = eng.compress(rt, run, targets, "C", "prefill", _queries_for(rt0, run, n, None, "C"),
                                           over, per_head)
                    comp[0] += s
                    comp[1] += c
                rt.reset_peak()
                peak_tokens[0] = 0
                after(rt, per_layer)
                cpu_model0 = eng.model_cpu_s
                kv: list[int] = []
                t0 = time.perf_counter()
                if forced:
                    logits = [last[None]]
                    for i, tok in enumerate(trace[:-1]):
                        evict_ahead(rt, n + i, per_layer, targets)
                        logits.append(eng.forward(rt, [tok], n + i)[-1:])
                        kv.append(rt.live_bytes())
                        after(rt, per_layer)
                    gen, text = trace, ""
                    kv_mean = sum(kv) / len(kv) if kv else float(rt.live_bytes())
                else:
                    gen, _, kv_mean = eng.generate(
                        rt, last, n, item.max_new_tokens,
                        before_step=lambda rt_, pos: evict_ahead(rt_, pos, per_layer, targets),
                        after_step=lambda rt_: after(rt_, per_layer))
                    text = eng.tok.decode(gen, skip_special_tokens=True)
                secs = time.perf_counter() - t0
                model_cpu = prefill_cpu + eng.model_cpu_s - cpu_model0
            except MethodError as e:
                run.error = str(e)
                rows.append(_error_row(item, run, b))
                continue
            kl: float | None = None
            top1: float | None = None
            sc: float | None = None
            if forced:
                kl, top1 = fidelity(qref.top_ids, qref.top_logp, torch.cat(logits))
            else:
                sc = score(item, q, text)
            steps = len(trace) - 1 if forced else len(gen) - 1
            rows.append(Row(item=item.id, task=item.task, question=0, method=run.name, budget=b, score=sc, kl=kl,
                            top1=top1,
                            kept_tokens=sum(sum(x.lengths()) for x in rt.layers) / (len(eng.info.attention_layers) * eng.info.n_kv_heads),
                            kv_bytes=rt.live_bytes(), kv_bytes_peak=rt.peak_live, kv_bytes_decode_mean=kv_mean,
                            kv_tokens_layer_max=peak_tokens[0], model_cpu_s=model_cpu, compress_s=comp[0],
                            compress_cpu_s=comp[1], decode_tok_s=steps / secs if secs > 0 and steps > 0 else None,
                            generated_tokens=len(gen), prediction=text[:200] if text else None))
    return rows, reference
