"""Names of the method interface, free of torch so that reviewbench can check a method.py statically."""

#: The base class a submission's class subclasses, and the one hook it must define.
INTERFACE_BASE = "EvictionMethod"
INTERFACE_HOOK = "select"
#: Hooks a method may define; the harness calls each only when present.
OPTIONAL_HOOKS = ("setup", "layer_budgets", "on_decode")
