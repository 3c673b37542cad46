"""Tool-call and network log parsers (one per format, one ``Event`` stream) and the audit rules over them."""
