"""Every file and folder name of a training run directory, and of the checkpoints in it, in one place.

RUN_DIR/
config.yaml              CONFIG_FILE: the composed config of the last launch (f5lite.storage.rundir)
vocab.txt                VOCAB_FILE: the training data's vocab
run.lock                 LOCK_FILE: the launch holding the run (f5lite.storage.lock)
logs/                    LOGS
train.jsonl          TRAIN_LOG: the scalars (f5lite.train.loggers)
eval.jsonl           EVAL_LOG: evaluations while training (f5lite.train.evaluation)
samples/             SAMPLES_DIR: training samples
checkpoints/             CHECKPOINTS (f5lite.storage.store)
latest               LATEST: the newest committed checkpoint's name
step-00000250/       STEP_PREFIX + the update
manifest.json    MANIFEST: sizes and checksums of the files
meta.json        META: the update, the data position, skeletons of the optimizers' states, ...
model.safetensors, ema.safetensors, ...   one file per tensor group (the *_GROUP names)
step-00000250.tmp/   TMP_SUFFIX: a checkpoint being written
export/                  EXPORT: the export written at the end (f5lite.storage.pretrained)
"""

CONFIG_FILE = "config.yaml"
VOCAB_FILE = "vocab.txt"
LOCK_FILE = "run.lock"
LOGS = "logs"
TRAIN_LOG = "train.jsonl"
EVAL_LOG = "eval.jsonl"
SAMPLES_DIR = "samples"
CHECKPOINTS = "checkpoints"
EXPORT = "export"

LATEST = "latest"
STEP_PREFIX = "step-"
TMP_SUFFIX = ".tmp"
MANIFEST = "manifest.json"
META = "meta.json"

MODEL_GROUP = "model"
"""A flow network's weights (with LoRA, its adapters alone)."""
OPTIMIZER_GROUP = "optimizer"
"""Its optimizer's tensors; the metadata key of the same name holds their skeleton."""
EMA_GROUP = "ema"
"""Its weight average."""
DURATION_TENSORS = "duration"
"""The duration predictor's weights (`duration.train=alongside`, or `objective=duration`)."""
DURATION_OPTIMIZER = "duration_optimizer"
"""The duration predictor's optimizer state (and the metadata key of its skeleton)."""
TEACHER_GROUP = "teacher"
"""A distillation's second-stage teacher (the average of the student)."""

SCORE = "score"
"""Metadata key: the checkpoint's `ckpt.best_metric`."""
DURATION_UPDATES = "duration_applied"
"""Metadata key: the duration predictor's applied optimizer updates."""
