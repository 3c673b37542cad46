"""Self-play round 20 (issue 23): twelve papers no earlier round had ported, ported blind to the reader by a helper
(tests/selfplay_ports.py, "(round 20)" keys). Before: 4 of 12 read as their paper, 4 as another paper's rule (their
flag stands), 4 not read; after: 10, 2 and 0. Each cause is general (data flow, never a name), each with the
neighbour that must not read so; every case written fresh here."""

from __future__ import annotations

from reviewbench.evidence.computation import computation

HEAD = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class M(EvictionMethod):
    name = "m"
    query_window = 8

    def select(self, view: LayerView) -> Keep:
        a = view.group(view.attention().mean(dim=1), "mean")
        out = []
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
BODY
        return Keep(tuple(out))
'''


def _f(body: str) -> set[str]:
    return set(computation(HEAD.replace("BODY", body)).features)


def test_a_greedy_pick_s_similarity_made_on_the_spot_suppresses_its_neighbours() -> None:
    # farthest-point growth: every token's gap to its nearest kept key, folded with the row of the key just picked
    grow = ("            u = k / k.norm(dim=-1, keepdim=True)\n            gap = 1.0 - u @ u[0]\n"
            "            kept = [0]\n            for _ in range(view.budget - 1):\n"
            "                nxt = int(gap.argmax())\n                kept.append(nxt)\n"
            "                gap = torch.minimum(gap, 1.0 - u @ u[nxt])\n"
            "            out.append(torch.tensor(kept))")
    f = _f(grow)
    assert {"key_similarity", "similarity_suppression"} <= f, f
    # one similarity to the single best token, computed once: a score of its own, no greedy suppression
    once = _f("            u = k / k.norm(dim=-1, keepdim=True)\n            best = int(a[h].argmax())\n"
              "            out.append((a[h] - 0.1 * (u @ u[best])).topk(view.budget).indices)")
    assert "similarity_suppression" not in once


def test_a_score_lowered_by_its_look_alikes_scores_is_suppression() -> None:
    damp = ("            u = torch.nn.functional.normalize(k, dim=-1)\n            sim = u @ u.T\n"
            "            w, nb = sim.topk(8, dim=-1)\n"
            "            s = a[h] - 0.5 * (w * a[h][nb]).sum(-1)\n            out.append(s.topk(view.budget).indices)")
    assert "similarity_suppression" in _f(damp)
    # a score less its own mean (no likeness of keys): no suppression
    centred = _f("            s = a[h] - a[h].mean()\n            out.append(s.topk(view.budget).indices)")
    assert "similarity_suppression" not in centred


def test_the_length_of_unit_rows_is_no_key_norm() -> None:
    for body in ("            u = k / k.norm(dim=-1, keepdim=True)\n            g = u.pow(2).sum(-1)\n",
                 "            u = torch.nn.functional.normalize(k, dim=-1)\n            g = torch.einsum('td,td->t', u, u)\n"):
        unit = _f(body + "            out.append((a[h] * g).topk(view.budget).indices)")
        assert "key_norm" not in unit, body
    norm = _f("            s = k.pow(2).sum(-1)\n            out.append(s.topk(view.budget).indices)")
    assert "key_norm" in norm


def test_a_score_against_its_neighbours_scores_is_no_threshold() -> None:
    louder = _f("            nb = a[h][torch.arange(a.shape[-1]).unsqueeze(1) + torch.arange(1, 3).clamp(max=0)]\n"
                "            beaten = (nb > a[h][:, None]).sum(-1)\n"
                "            out.append((-beaten.float()).topk(view.budget).indices)")
    assert "attention_threshold" not in louder
    bar = _f("            hot = a[h] > a[h].mean()\n            out.append(hot.float().topk(view.budget).indices)")
    assert "attention_threshold" in bar


def test_an_empty_head_slice_is_no_sink_and_stacked_shifts_bound_to_a_name_pool() -> None:
    empty = _f("            keep = torch.arange(k.shape[0])[:0]\n"
               "            out.append(torch.cat([keep, a[h].topk(view.budget).indices]))")
    assert "sinks" not in empty
    first = _f("            keep = torch.arange(k.shape[0])[:4]\n"
               "            out.append(torch.cat([keep, a[h, 4:].topk(view.budget - 4).indices + 4]))")
    assert "sinks" in first
    pooled = _f("            p = torch.nn.functional.pad(a[h][None], (2, 2), value=0.0)\n"
                "            shifts = torch.stack([p[:, i:i + a.shape[-1]] for i in range(5)], dim=0)\n"
                "            out.append(shifts.amax(dim=0)[0].topk(view.budget).indices)")
    assert "pooling" in pooled and "max_attention" not in pooled


def test_one_head_s_keys_unflattened_along_the_tokens_are_blocks() -> None:
    body = ("            n = k.shape[0] // 16 * 16\n            q = view.queries[h * view.model.group_size, -1].float()\n"
            "            per = (k[:n] @ q).unflatten(0, (-1, 16)).amax(dim=1)\n"
            "            top = per.topk(max(1, view.budget // 16)).indices\n"
            "            out.append((top[:, None] * 16 + torch.arange(16)).flatten())")
    assert "block_scores" in _f(body)
    # every head's keys unflattened along the heads (a GQA regrouping): no blocks of tokens
    heads = computation(HEAD.replace("BODY", "            pass").replace(
        "        out = []\n",
        "        g = view.keys.unflatten(0, (-1, 1)).float().norm(dim=-1).mean(1)\n"
        "        out = [g[h].topk(view.budget).indices for h in range(view.n_kv_heads)]\n")).features
    assert "block_scores" not in heads


def test_numpy_axes_name_the_rows_and_a_named_root_makes_unit_rows() -> None:
    body = ("            x = k.numpy()\n            mass = np.abs(x).sum(axis=1)\n"
            "            lengths = np.sqrt((x * x).sum(axis=1, keepdims=True))\n"
            "            u = x / np.maximum(lengths, 1e-6)\n            ref = np.argsort(-mass)[:4]\n"
            "            echo = (u @ u[ref].T).max(axis=1)\n"
            "            out.append(torch.from_numpy(np.argsort(echo)[:view.budget].copy()))")
    f = _f(body.replace("            x = k.numpy()", "            import numpy as np\n            x = k.numpy()"))
    assert {"key_norm", "key_similarity"} <= f and "mean_key" not in f, f
    # summed over the tokens (axis 0) the keys give one vector: the mean key
    mean = _f("            import numpy as np\n            x = k.numpy()\n            m = x.sum(axis=0)\n"
              "            out.append(torch.from_numpy(np.argsort(-(x @ m))[:view.budget].copy()))")
    assert "mean_key" in mean and "key_norm" not in mean


def test_an_exponential_race_over_a_data_weight_is_a_weighted_draw() -> None:
    race = _f("            import numpy as np\n            rng = np.random.default_rng(view.layer)\n"
              "            w = (view.values[h].float() ** 2).sum(-1).numpy()\n"
              "            key = rng.exponential(size=w.shape[0]) / np.maximum(w, 1e-12)\n"
              "            out.append(torch.from_numpy(np.argsort(key)[:view.budget].copy()))")
    assert {"importance_sampling", "value_norm"} <= race, race
    # noise added to break ties is no draw by the weight
    tie = _f("            s = a[h] + 1e-6 * torch.rand(a.shape[-1])\n            out.append(s.topk(view.budget).indices)")
    assert "importance_sampling" not in tie


def test_a_key_counted_in_its_most_alike_representative_s_cell_is_clustering() -> None:
    leader = ("            u = torch.nn.functional.normalize(k, dim=-1)\n            lead, size = [0], [1]\n"
              "            for i in range(1, u.shape[0]):\n                d = 1.0 - u[lead] @ u[i]\n"
              "                j = int(d.argmin())\n                if d[j] < 0.3:\n                    size[j] += 1\n"
              "                else:\n                    lead.append(i)\n                    size.append(1)\n"
              "            order = torch.tensor(size).argsort(descending=True)[:view.budget]\n"
              "            out.append(torch.tensor(lead)[order])")
    assert "key_clustering" in _f(leader)
    # a token counted for the query that ranks it first: a vote, no cluster of keys
    votes = _f("            q = view.queries[h * view.model.group_size].float()\n            c = [0] * k.shape[0]\n"
               "            for r in range(q.shape[0]):\n                c[int((q[r] @ k.T).argmax())] += 1\n"
               "            out.append(torch.tensor(c).float().topk(view.budget).indices)")
    assert "key_clustering" not in votes
