"""The benchmarks' shared code, outside the wheel; the benchmarks themselves are `scripts/*.py`.

`runner` runs configurations in processes of their own, `results` writes what they measured with the machine, the
versions and the date; the rest is what several benchmarks measure alike (`models`, `flops`, `step_profile`,
`f5tts`, `arms`).
"""
