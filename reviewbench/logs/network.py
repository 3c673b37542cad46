"""Network logs: Squid native ``access.log``, HAR files, and a JSONL connection log.

Every connection becomes a ``net`` event with host, IP, port, method, URL and bytes. The IP -> host pairs
they reveal let the audit recognise raw-IP connections to known hosts in shell commands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone
from urllib.parse import urlsplit

from reviewbench.logs.events import Event, FileInfo, ParseStats
from reviewbench.logs.reader import json_records, raw_lines

SQUID_LINE = re.compile(
    rb"^(?P<ts>\d+(?:\.\d+)?)\s+(?P<elapsed>-?\d+)\s+(?P<client>\S+)\s+(?P<code>[A-Z_]+)/(?P<status>\d{3})\s+"
    rb"(?P<bytes>\d+)\s+(?P<method>[A-Z]+|-)\s+(?P<url>\S+)\s+(?P<user>\S+)\s+(?P<hier>[A-Z_]+)/(?P<peer>\S+)"
    rb"(?:\s+(?P<mime>\S+))?\s*$")


def split_host(url: str) -> tuple[str | None, int | None]:
    """Host and port of a URL or of a CONNECT target ``host:port``."""
    if "://" not in url:
        host, _, port_text = url.rpartition(":")
        if host and port_text.isdigit():
            return host.strip("[]").lower(), int(port_text)
        return (url.lower() or None), None
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError:
        return None, None
    try:
        port: int | None = parts.port
    except ValueError:
        port = None
    return (hostname.lower() if hostname else None), port


def _iso(ts: float) -> str | None:
    try:
        return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):  # a hostile or corrupt timestamp: the event has no time
        return None


def parse_squid(info: FileInfo, stats: ParseStats) -> Iterator[Event]:
    path, agent = info.path, info.agent
    for lineno, raw in raw_lines(path, stats, 1 << 16):
        line = raw.strip()
        if not line or line.startswith(b"#"):
            continue
        m = SQUID_LINE.match(line)
        if not m:
            stats.unread_records += 1
            stats.warn(f"{path}:{lineno}", "not a Squid native access.log line")
            continue
        url = m["url"].decode("utf-8", "replace")
        host, port = split_host(url)
        peer = m["peer"].decode("utf-8", "replace")
        yield Event(source=f"{path}:{lineno}", tool="squid", kind="net", agent=agent, actor="network",
                    time=_iso(float(m["ts"])), urls=[url] if "://" in url else [], host=host, port=port,
                    ip=peer if re.match(r"^[\d.:a-fA-F]+$", peer) and peer != "-" else None,
                    method=m["method"].decode(), nbytes=int(m["bytes"]),
                    output=f"{m['code'].decode()}/{m['status'].decode()} client {m['client'].decode()}")


def _d(v: object) -> dict:
    return v if isinstance(v, dict) else {}


def _s(v: object) -> str | None:
    return v if isinstance(v, str) and v else None


def parse_har(info: FileInfo, stats: ParseStats) -> Iterator[Event]:
    """HAR entries, streamed one at a time from ``log.entries`` (a HAR is one JSON document, often huge)."""
    path, agent = info.path, info.agent
    n = 0
    for lineno, rec in json_records(path, stats, "json"):
        if "log" in rec:  # the header: creator, pages
            continue
        req = _d(rec.get("request"))
        url = str(req.get("url", ""))
        host, port = split_host(url)
        resp = _d(rec.get("response"))
        size = _d(resp.get("content")).get("size")
        yield Event(source=f"{path}:{lineno}", tool="har", kind="net", agent=agent, actor="network",
                    time=_s(rec.get("startedDateTime")), urls=[url], host=host, port=port,
                    ip=_s(rec.get("serverIPAddress")), method=_s(req.get("method")),
                    nbytes=size if isinstance(size, int) else None, output=f"status {resp.get('status')}")
        n += 1
    if n == 0:
        stats.warn(f"{path}:1", "HAR has no log.entries")


def parse_connlog(info: FileInfo, stats: ParseStats) -> Iterator[Event]:
    """``{time|ts, host|dst_host|sni, port|dst_port, method, url, bytes, dst_ip|ip, agent?}`` per line."""
    path, agent = info.path, info.agent
    for lineno, rec in json_records(path, stats, "lines" if info.layout == "lines" else "json"):
        url = rec.get("url") or ""
        host = rec.get("host") or rec.get("dst_host") or rec.get("sni")
        port = rec.get("port") or rec.get("dst_port")
        if not host and url:
            host, port = split_host(url)[0], port or split_host(url)[1]
        ts = rec.get("time") or rec.get("ts")
        if isinstance(ts, (int, float)):
            ts = _iso(ts)
        nbytes = rec.get("bytes")
        up, down = rec.get("bytes_up"), rec.get("bytes_down")
        if nbytes is None and (isinstance(up, int) or isinstance(down, int)):
            nbytes = (up if isinstance(up, int) else 0) + (down if isinstance(down, int) else 0)
        yield Event(source=f"{path}:{lineno}", tool="connlog", kind="net", agent=_s(rec.get("agent")) or agent,
                    actor="network", time=_s(ts), urls=[str(url)] if url else [],
                    host=str(host).lower() if host else None,
                    port=int(port) if isinstance(port, (int, str)) and str(port).isdigit() else None,
                    ip=_s(rec.get("dst_ip")) or _s(rec.get("ip")), method=_s(rec.get("method")),
                    nbytes=nbytes if isinstance(nbytes, int) else None, output=_s(rec.get("decision")))
