"""Tokens ranked by how many queries' own top-k searches fetched them (RetrievalAttention's nearest-neighbour
retrieval turned into an eviction: fetch counts) are read as ``query_votes`` in every counting idiom, and a
count of one ranking of scores already summed over the queries (a mask), or of a mean query's picks, is not."""

from __future__ import annotations

import pytest

from reviewbench.evidence.computation.features import computation
from reviewbench.evidence.priorart_evidence import computation_matches

HEAD = '''
import numpy as np
import torch
from harness import EvictionMethod, Keep, LayerView


class Fetched(EvictionMethod):
    name = "fetched"

    def select(self, view: LayerView) -> Keep:
        out = []
        for h in range(view.n_kv_heads):
            k = view.keys[h].float()
            q = view.queries[h].float()
            n = k.shape[0]
            want = min(view.budget, n)
'''
TAIL = '''
            out.append(score.topk(want).indices.sort().values)
        return Keep(tuple(out))
'''

COUNTED = {
    "scatter_add over rows": (
        "            top = (q @ k.T).topk(8, dim=-1).indices\n"
        "            score = torch.zeros(q.shape[0], n).scatter_add_(1, top, torch.ones_like(top, dtype=torch.float))"
        ".sum(0)\n"),
    "index_add_ statement": (
        "            top = torch.einsum('qd,td->qt', q, k).topk(8, dim=-1).indices.reshape(-1)\n"
        "            score = torch.zeros(n)\n"
        "            score.index_add_(0, top, torch.ones(top.numel()))\n"),
    "one-hot rows summed": (
        "            picks = torch.softmax(q @ k.T / 8.0, dim=-1).argmax(dim=-1)\n"
        "            score = torch.nn.functional.one_hot(picks, n).float().sum(0)\n"),
    "a loop adding one per pick": (
        "            sims = torch.matmul(q, k.transpose(0, 1))\n"
        "            score = torch.zeros(n)\n"
        "            for row in sims:\n"
        "                for j in row.topk(4).indices:\n"
        "                    score[j] += 1\n"),
    "numpy add.at": (
        "            ip = (q @ k.T).numpy()\n"
        "            idx = np.argsort(-ip, axis=1)[:, :6]\n"
        "            c = np.zeros(n)\n"
        "            np.add.at(c, idx.ravel(), 1.0)\n"
        "            score = torch.from_numpy(c)\n"),
    "the interface's attention, bincount": (
        "            hits = view.attention(h).topk(5, dim=-1).indices.flatten()\n"
        "            score = torch.bincount(hits, minlength=n).float()\n"),
    "each query's picks weighted by its softmax over them (attention restricted to the fetched keys)": (
        "            best, where = (q @ k.T).topk(8, dim=-1)\n"
        "            score = torch.zeros(n).index_add_(0, where.reshape(-1), best.softmax(-1).reshape(-1))\n"),
    "unique with counts": (
        "            ids, cnt = torch.unique((q @ k.T).topk(4, dim=-1).indices, return_counts=True)\n"
        "            score = torch.zeros(n).index_put((ids,), cnt.float())\n"),
}

NOT_COUNTED = {
    "window attention summed (SnapKV's core)": (
        "            score = torch.softmax(q @ k.T, dim=-1).sum(0)\n"),
    "a mask from one ranking of summed scores": (
        "            a = torch.softmax(q @ k.T, dim=-1).sum(0)\n"
        "            m = torch.bincount(a.topk(want).indices, minlength=n)\n"
        "            score = m.float() + a\n"),
    "a mean query's picks counted": (
        "            s = k @ q.mean(0)\n"
        "            score = torch.bincount(s.topk(4).indices, minlength=n).float() + s\n"),
    "key norms": "            score = -k.norm(dim=-1)\n",
    "one more for the first of one ranking (largest remainders)": (
        "            a = torch.softmax(q @ k.T, dim=-1)\n"
        "            score = a.sum(0)\n"
        "            order = torch.argsort(a[0] - a[0].floor(), descending=True)\n"
        "            score[order[:3]] += 1\n"),
    "picks of one ranking given a share of the budget": (
        "            a = torch.softmax(q @ k.T, dim=-1)\n"
        "            top = a.topk(8, dim=-1).indices\n"
        "            share = torch.full_like(top, want // 8, dtype=torch.float)\n"
        "            score = a.sum(0) + torch.zeros(n).index_add_(0, top[0], share[0])\n"),
}


@pytest.mark.parametrize("idiom", sorted(COUNTED))
def test_fetch_counts_are_query_votes(idiom: str) -> None:
    features = computation(HEAD + COUNTED[idiom] + TAIL).features
    assert "query_votes" in features, (idiom, sorted(features))


@pytest.mark.parametrize("idiom", sorted(NOT_COUNTED))
def test_other_counts_are_not(idiom: str) -> None:
    features = computation(HEAD + NOT_COUNTED[idiom] + TAIL).features
    assert "query_votes" not in features, (idiom, sorted(features))


def test_fetch_counts_beside_a_frame_name_retrieval_attention() -> None:
    body = (
        "            ip = q @ k.T\n"
        "            score = torch.bincount(ip.topk(max(1, want // 8), dim=-1).indices.flatten(), minlength=n).float()\n"
        "            score[-want // 4:] = float('inf')\n"
        "            score[:4] = float('inf')\n")
    c = computation(HEAD + body + TAIL)
    matches = computation_matches(c.features, "Keeps the tokens the recent queries fetch.", c.paths, "C")
    assert matches and matches[0].short_name == "RetrievalAttention" and matches[0].level == "same", matches[:3]


def test_fetch_counts_ranked_by_the_interface_are_query_votes() -> None:
    src = '''
import torch
from harness import EvictionMethod, Keep, LayerView


class Ballots(EvictionMethod):
    name = "ballots"
    reconstruction_queries = True

    def select(self, view: LayerView) -> Keep:
        g = view.model.group_size
        h_kv, t, d = view.keys.shape
        q = view.queries.float().view(h_kv, -1, d)
        ip = torch.einsum("hnd,htd->hnt", q, view.keys.float())
        best, where = ip.topk(16, dim=-1)
        votes = torch.zeros(h_kv, t)
        votes.scatter_add_(1, where.flatten(1), best.softmax(-1).flatten(1))
        return Keep.from_topk(votes, view.budget, view.valid)
'''
    assert "query_votes" in computation(src).features
    summed = src.replace("best, where = ip.topk(16, dim=-1)", "votes = ip.softmax(-1).sum(1)").replace(
        "        votes = torch.zeros(h_kv, t)\n        votes.scatter_add_(1, where.flatten(1), best.softmax(-1).flatten(1))\n",
        "")
    assert "query_votes" not in computation(summed).features
