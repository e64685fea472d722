"""Model providers: Claude through the official SDK, an offline model, OpenAI-compatible servers."""
