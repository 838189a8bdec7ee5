"""`f5lite-eval`: score a model (or audio already made) on a test set and write a report.

It synthesizes each row through `f5lite.infer`, scores it with the speech metrics of `f5lite.metrics`, and writes
`results.jsonl`, `summary.json` and a self-contained HTML report.

- `config`: the tool's schema (`EvalConfig`, composed from `configs/eval.yaml` and `key=value` arguments).
- `run`: one evaluation, resumable row by row; `outdir` is its output directory's layout.
- `duration`: the duration estimates scored against the ground truth.
- `report` (with `png`): the self-contained HTML report.
- `cli`: the command line.
"""
