"""The built-in providers: OpenAI-compatible, Anthropic, Ollama, a Python callable, and
an embedded llama.cpp model."""
