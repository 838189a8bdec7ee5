"""The studio page's tabs, one module each; `f5lite.studio.app` builds the page from them, in this order.

- `speak`: Speak, synthesis with a project's model, a reference or saved voices, and a script.
- `data`: Data, raw recordings to a dataset (transcription, proofreading, the vocabulary check, preparation).
- `train`: Train, a training run's plan, start, stop and resume, and its progress.
- `evaluate`: Evaluate & export, an evaluation of a model, the export of a run, and their archives.
- `shared`: what the tabs share: the page's one-line errors, number fields with their limits, a job's state as text.

Each tab module's `build` lays out its `gr.Tab` inside the page's Blocks, wires its buttons to the handlers of its
`_Routes` (a class holding what they need: the workspace, the settings, the model cache), and returns the components
and handlers that the page wires beyond the tab (the project picker, the poll of running jobs, the Stop buttons).
"""
