"""Network logs: Squid native ``access.log``, HAR files, and a JSONL connection log.

Every connection becomes a ``net`` event with host, IP, port, method, URL and bytes. The IP -> host pairs
they reveal let the audit recognise raw-IP connections to known hosts in shell commands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

import orjson

from reviewbench.logs.events import Event, ParseStats
from reviewbench.logs.reader import json_lines

SQUID_LINE = re.compile(
    rb"^(?P<ts>\d+(?:\.\d+)?)\s+(?P<elapsed>-?\d+)\s+(?P<client>\S+)\s+(?P<code>[A-Z_]+)/(?P<status>\d{3})\s+"
    rb"(?P<bytes>\d+)\s+(?P<method>[A-Z]+|-)\s+(?P<url>\S+)\s+(?P<user>\S+)\s+(?P<hier>[A-Z_]+)/(?P<peer>\S+)"
    rb"(?:\s+(?P<mime>\S+))?\s*$")


def split_host(url: str) -> tuple[str | None, int | None]:
    """Host and port of a URL or of a CONNECT target ``host:port``."""
    if "://" not in url:
        host, _, port = url.rpartition(":")
        if host and port.isdigit():
            return host.strip("[]").lower(), int(port)
        return (url.lower() or None), None
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return (parts.hostname.lower() if parts.hostname else None), port


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def parse_squid(path: Path, stats: ParseStats, agent: str | None) -> Iterator[Event]:
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            stats.lines += 1
            stats.bytes += len(raw)
            line = raw.strip()
            if not line or line.startswith(b"#"):
                continue
            m = SQUID_LINE.match(line)
            if not m:
                stats.warn(f"{path}:{lineno}", "not a Squid native access.log line")
                continue
            url = m["url"].decode("utf-8", "replace")
            host, port = split_host(url)
            peer = m["peer"].decode()
            yield Event(source=f"{path}:{lineno}", tool="squid", kind="net", agent=agent, actor="network",
                        time=_iso(float(m["ts"])), urls=[url] if "://" in url else [], host=host, port=port,
                        ip=peer if re.match(r"^[\d.:a-fA-F]+$", peer) and peer != "-" else None,
                        method=m["method"].decode(), nbytes=int(m["bytes"]),
                        output=f"{m['code'].decode()}/{m['status'].decode()} client {m['client'].decode()}")


def parse_har(path: Path, stats: ParseStats, agent: str | None) -> Iterator[Event]:
    """HAR is one JSON document, so it is read whole (unlike the line formats, memory grows with it)."""
    raw = path.read_bytes()
    stats.lines += raw.count(b"\n") + 1
    stats.bytes += len(raw)
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        stats.warn(f"{path}:1", f"HAR is not valid JSON: {e}")
        return
    entries = (doc.get("log") or {}).get("entries") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        stats.warn(f"{path}:1", "HAR has no log.entries")
        return
    for i, entry in enumerate(entries):
        req = entry.get("request") or {}
        url = str(req.get("url", ""))
        host, port = split_host(url)
        resp = entry.get("response") or {}
        size = (resp.get("content") or {}).get("size")
        yield Event(source=f"{path}:entry{i}", tool="har", kind="net", agent=agent, actor="network",
                    time=entry.get("startedDateTime"), urls=[url], host=host, port=port,
                    ip=entry.get("serverIPAddress") or None, method=req.get("method"),
                    nbytes=size if isinstance(size, int) else None, output=f"status {resp.get('status')}")


def parse_connlog(path: Path, stats: ParseStats, agent: str | None) -> Iterator[Event]:
    """``{time|ts, host|dst_host|sni, port|dst_port, method, url, bytes, dst_ip|ip, agent?}`` per line."""
    for lineno, rec in json_lines(path, stats):
        url = rec.get("url") or ""
        host = rec.get("host") or rec.get("dst_host") or rec.get("sni")
        port = rec.get("port") or rec.get("dst_port")
        if not host and url:
            host, port = split_host(url)[0], port or split_host(url)[1]
        ts = rec.get("time") or rec.get("ts")
        if isinstance(ts, (int, float)):
            ts = _iso(ts)
        nbytes = rec.get("bytes")
        if nbytes is None and ("bytes_up" in rec or "bytes_down" in rec):
            nbytes = int(rec.get("bytes_up") or 0) + int(rec.get("bytes_down") or 0)
        yield Event(source=f"{path}:{lineno}", tool="connlog", kind="net", agent=rec.get("agent") or agent,
                    actor="network", time=ts, urls=[url] if url else [], host=str(host).lower() if host else None,
                    port=int(port) if isinstance(port, (int, str)) and str(port).isdigit() else None,
                    ip=rec.get("dst_ip") or rec.get("ip"), method=rec.get("method"),
                    nbytes=nbytes if isinstance(nbytes, int) else None, output=rec.get("decision"))
