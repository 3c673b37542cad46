"""One module per judge provider; the module's name is the provider's name in ``arena.toml``.

Each module defines ``PROVIDER``: a :class:`~reviewbench.judges.base.JudgeProvider` subclass that declares
its capabilities and implements one step. Nothing else needs to change to add a provider.
"""
