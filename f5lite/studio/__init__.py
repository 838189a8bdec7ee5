"""`f5lite-studio`: a web app (Gradio) from raw recordings to a tested, exported voice.

The studio is a face on the library and its tools, not a second implementation of them: Speak synthesizes through
`f5lite.infer.Synthesizer` (pieces cut as `f5lite-serve` cuts them, so audio streams as it is made); Data runs
`f5lite-transcribe` and `f5lite-prepare` as processes; Train starts `python -m f5lite.train` as a process of its own
and reads what the run writes; Evaluate runs `f5lite-eval` and `f5lite-export`. Everything a project holds lives in
one folder under the studio's root (`f5lite.studio.project`), and every long job's state is in files there
(`f5lite.studio.jobs`), so a browser reload or a restart of the studio finds each job as it is.
"""
