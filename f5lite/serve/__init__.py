"""`f5lite-serve`: a model behind OpenAI's speech API, with voices, streaming and batched requests.

- `settings`: the server's limits and defaults; `cli`: the command line.
- `voices`: reference clips with transcripts from a folder (and, when allowed, added or deleted over HTTP).
- `engine`: the model's thread: pieces of many requests batched into one sampler call.
- `speech`: one request's text cut into pieces, spoken through the engine, cross-faded as a stream.
- `encoding`: OpenAI's response formats, encoded piece by piece.
- `app`: the FastAPI routes and OpenAI's error shape; `metrics`: Prometheus's counters and histograms.

The `serve` extra brings FastAPI, uvicorn, PyAV (the compressed formats) and prometheus-client. This package sits
on top of inference and never the other way round.
"""
