"""Judge providers behind one interface (Anthropic, OpenAI and compatible servers, local), the panel and tie-break."""
