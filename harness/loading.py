"""Loading a method: a reference method by name, or the one EvictionMethod subclass of a ``method.py``.

Importing a submission's ``method.py`` executes it, so the harness does this only inside the method's own
sandboxed process (``harness.methodhost``); the trusted process only ever instantiates reference methods.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from pathlib import Path

from harness.api import EvictionMethod


def is_reference(spec: str) -> bool:
    from harness.methods import REFERENCE_METHODS

    return spec in REFERENCE_METHODS


def code_hash(spec: str) -> str:
    """What a method's behaviour depends on: its source (a reference method: its class's source)."""
    from harness.methods import REFERENCE_METHODS

    if spec in REFERENCE_METHODS:
        return hashlib.sha256(inspect.getsource(REFERENCE_METHODS[spec]).encode()).hexdigest()[:16]
    return hashlib.sha256(method_file(spec).read_bytes()).hexdigest()[:16]


def method_file(spec: str) -> Path:
    from harness.methods import REFERENCE_METHODS

    path = Path(spec)
    file = path / "method.py" if path.is_dir() else path
    if not file.is_file():
        raise FileNotFoundError(f"{spec}: no method.py (and not a reference method: {', '.join(REFERENCE_METHODS)})")
    return file


def load_method(spec: str) -> tuple[str, EvictionMethod, str]:
    """(name, instance, code hash). A folder's name is the class's ``name`` or, when unnamed, the folder's."""
    from harness.methods import REFERENCE_METHODS

    if spec in REFERENCE_METHODS:
        ref: EvictionMethod = REFERENCE_METHODS[spec]()  # the registry holds concrete classes
        return spec, ref, code_hash(spec)
    file = method_file(spec)
    mod_name = f"submitted_method_{hashlib.sha256(str(file).encode()).hexdigest()[:8]}"
    mspec = importlib.util.spec_from_file_location(mod_name, file)
    if mspec is None or mspec.loader is None:
        raise ImportError(f"{file}: cannot be imported")
    module = importlib.util.module_from_spec(mspec)
    sys.modules[mod_name] = module
    mspec.loader.exec_module(module)
    classes = [c for c in vars(module).values() if inspect.isclass(c) and issubclass(c, EvictionMethod)
               and c.__module__ == mod_name]
    if not classes:
        raise TypeError(f"{file.name}: no class subclassing EvictionMethod")
    if len(classes) > 1:
        raise TypeError(f"{file.name}: {len(classes)} EvictionMethod classes ({', '.join(c.__name__ for c in classes)}); "
                        f"define one")
    cls = classes[0]
    name = getattr(cls, "name", "unnamed")
    folder = file.parent.name
    return (name if name != "unnamed" else folder), cls(), code_hash(spec)
