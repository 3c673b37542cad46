"""Client-side web search for judges whose provider has none: the arXiv API over httpx, and DuckDuckGo through
``ddgs`` when that package is installed (``pip install ddgs``). Every result a judge saw is recorded with
its tool call, so a replay shows the same evidence even after the web has moved on.
"""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from typing import Any

import httpx
from pydantic import BaseModel

ARXIV_API = "https://export.arxiv.org/api/query"
_ATOM = {"a": "http://www.w3.org/2005/Atom"}


class SearchResult(BaseModel):
    title: str
    url: str
    snippet: str = ""
    source: str  # arxiv | duckduckgo
    authors: list[str] = []
    published: str | None = None
    arxiv_id: str | None = None


class SearchUnavailable(RuntimeError):
    """No search backend answered (offline, or every backend failed); the message says why."""


def parse_arxiv_atom(xml_text: str) -> list[SearchResult]:
    root = ET.fromstring(xml_text)
    out = []
    for e in root.findall("a:entry", _ATOM):
        url = (e.findtext("a:id", "", _ATOM) or "").strip()
        arxiv_id = url.rsplit("/abs/", 1)[-1].split("v")[0] if "/abs/" in url else None
        title = " ".join((e.findtext("a:title", "", _ATOM) or "").split())
        if not title or title.lower() == "error":
            continue
        out.append(SearchResult(
            title=title, url=url, source="arxiv", arxiv_id=arxiv_id,
            snippet=" ".join((e.findtext("a:summary", "", _ATOM) or "").split())[:400],
            authors=[(a.findtext("a:name", "", _ATOM) or "").strip() for a in e.findall("a:author", _ATOM)],
            published=(e.findtext("a:published", "", _ATOM) or "")[:10] or None))
    return out


class WebSearch:
    def __init__(self, client: httpx.AsyncClient | None = None, use_ddgs: bool = True, timeout: float = 20.0) -> None:
        self.client = client or httpx.AsyncClient(timeout=timeout, follow_redirects=True)
        self.use_ddgs = use_ddgs

    async def arxiv(self, query: str, k: int = 5) -> list[SearchResult]:
        words = " AND ".join(f"all:{w}" for w in query.replace('"', " ").split()[:12])
        r = await self.client.get(ARXIV_API, params={"search_query": words, "max_results": k})
        r.raise_for_status()
        return parse_arxiv_atom(r.text)

    async def arxiv_by_id(self, arxiv_id: str) -> SearchResult | None:
        r = await self.client.get(ARXIV_API, params={"id_list": arxiv_id, "max_results": 1})
        r.raise_for_status()
        got = parse_arxiv_atom(r.text)
        return got[0] if got else None

    async def duckduckgo(self, query: str, k: int = 5) -> list[SearchResult]:
        try:
            from ddgs import DDGS  # optional dependency
        except ImportError:
            return []

        def run() -> list[dict[str, Any]]:
            return list(DDGS().text(query, max_results=k))

        rows = await asyncio.to_thread(run)
        return [SearchResult(title=r.get("title", ""), url=r.get("href", ""), snippet=r.get("body", "")[:400],
                             source="duckduckgo") for r in rows]

    async def search(self, query: str, k: int = 5) -> list[SearchResult]:
        """arXiv first (it is where this field publishes), then the open web; errors only if both fail."""
        results: list[SearchResult] = []
        errors: list[str] = []
        backends = [self.arxiv] + ([self.duckduckgo] if self.use_ddgs else [])
        for backend in backends:
            try:
                results += await backend(query, k)
            except (httpx.HTTPError, ET.ParseError, OSError, RuntimeError) as e:
                errors.append(f"{backend.__name__}: {type(e).__name__}: {e}"[:200])
            except Exception as e:  # ddgs raises its own exception types
                errors.append(f"{backend.__name__}: {type(e).__name__}: {e}"[:200])
        if not results and errors:
            raise SearchUnavailable("; ".join(errors))
        return results

    async def aclose(self) -> None:
        await self.client.aclose()
