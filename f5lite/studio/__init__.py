"""`f5lite-studio`: a web app (Gradio) from raw recordings to a tested, exported voice.

The studio is a face on the library and its tools, not a second implementation of them: Speak synthesizes through
`f5lite.infer.Synthesizer` (pieces cut as `f5lite-serve` cuts them, so audio streams as it is made); Data runs
`f5lite-transcribe` and `f5lite-prepare` as processes; Train starts `python -m f5lite.train` as a process of its own
and reads what the run writes; Evaluate runs `f5lite-eval` and `f5lite-export`. Everything a project holds lives in
one folder under the studio's root (`f5lite.studio.project`), and every long job's state is in files there
(`f5lite.studio.jobs`), so a browser reload or a restart of the studio finds each job as it is.

The modules:

- `cli`: the `f5lite-studio` command (and `python -m f5lite.studio`): the workspace, the login, the server.
- `settings`: `StudioSettings`, how the studio runs models (vocoder, device).
- `app`: the page: the project picker, the tabs, and the poll of the running jobs.
- `tabs`: one module per tab (Speak, Data, Train, Evaluate & export): its layout, its routes and their handlers.
- `speak`, `data`, `training`, `evaluate`: the work behind the tabs; `machine`: training settings proposed for
  this machine; `overrides`: what the page may hand to Hydra.
- `project`: the workspace and its project folders; `names`: the check of typed names; `limits`: the ranges of the
  page's number fields.
- `jobs`: long jobs as processes whose state is in files; `child`: the wrapper each job runs under.
"""
