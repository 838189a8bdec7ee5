"""`f5lite-serve`: a model behind OpenAI's speech API, with voices, streaming and batched requests.

- `settings`: the server's limits and defaults; `cli`: the command line.
- `guard`: what every request passes first: the web page it comes from, the key, uploads, the body's size and pace.
- `voices`: reference clips with transcripts from a folder (and, when allowed, added over HTTP, and those deleted).
- `engine`: the model's thread: pieces of many requests batched into one sampler call.
- `speech`: one request's text planned into pieces of known length, spoken through the engine, cross-faded.
- `admission`: the places for requests, in all and per client; `stream`: a response held to its client's pace.
- `encoding`: OpenAI's response formats, encoded piece by piece, with the exact length where a header holds one.
- `app`: the FastAPI routes; `errors`: OpenAI's error shape; `metrics`: Prometheus's counters and histograms.

The `serve` extra brings FastAPI, uvicorn, PyAV (the compressed formats) and prometheus-client. This package sits
on top of inference and never the other way round.
"""
