"""The `perf` section of a training run: speed and memory optimizations, `perf.ac` (activation checkpointing) among them.

The choices of each key are imported from the module that implements them (`f5lite.models`); the precision's, whose
meaning lives in the trainer (which imports this package), are named here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from f5lite.config.checks import check_at_least, check_choice, check_range
from f5lite.models.ac import AC_MODES
from f5lite.models.attention import SDPA_BACKENDS
from f5lite.models.compile import COMPILE_MODES, COMPILE_SCOPES
from f5lite.models.dropout import DROPOUT_KERNELS

PRECISION_AUTO = "auto"
"""The `perf.precision` value the trainer resolves at start: bf16 where the device computes it natively, else `no`."""
PRECISIONS = (PRECISION_AUTO, "no", "bf16", "fp16")
"""`perf.precision`: `auto`, or one of accelerate's mixed-precision names (`no` is float32)."""


@dataclass
class ACConfig:
    """Activation checkpointing of the backbone's blocks."""

    mode: str = "none"
    """`none`; `full`: recompute whole blocks (every `every_n`-th one); `selective`: op-level, keeps matmul and
    attention outputs and recomputes the cheap ops."""
    every_n: int = 1
    """With `mode=full`, checkpoint blocks 0, n, 2n, ... (1 = every block)."""

    def __post_init__(self) -> None:
        check_choice("perf.ac.mode", self.mode, AC_MODES)
        check_at_least("perf.ac.every_n", self.every_n, 1)


@dataclass
class PerfConfig:
    """Speed and memory optimizations, applied from outside the model; each one switchable from the command line."""

    precision: str = PRECISION_AUTO
    """Mixed precision: `auto`, `no` (fp32), `bf16`, or `fp16` (the only one that uses a gradient scaler). `auto` is
    resolved once, when the trainer starts, and logged in one line: `bf16` on a CUDA GPU that supports it and on a
    CPU that computes bf16 natively (AVX-512 BF16 or AMX, and no `ONEDNN_MAX_CPU_ISA` below it; ARM BF16), `no`
    elsewhere, where bf16 would be emulated (on an AVX2 CPU 5 to 10x slower than fp32 per update). A training run's
    directory records the resolved value. An explicit `bf16` on a CPU that emulates it runs, with a one-line warning."""
    compile: bool = False
    """Compile each backbone block in place with torch.compile (no `_orig_mod.` keys)."""
    compile_mode: str = "default"
    """torch.compile mode: `default` or `max-autotune-no-cudagraphs` (CUDA graphs modes record one graph per
    batch shape, which variable-length speech batches turn into a memory leak)."""
    compile_scope: str = "blocks"
    """What `perf.compile=true` compiles: `blocks` (each block, one graph they share) or `model` (the blocks, and
    each other module of the backbone that runs in every step, each in place: the time, text and input embeddings,
    the output norm and projection). Values other than `blocks` need `perf.compile=true`."""
    compile_dynamic: bool | None = None
    """torch.compile `dynamic`: null marks a length dynamic after it first changes, true starts dynamic. `false`
    (one graph per shape) is refused: batches vary in size as well as length, so the shapes are unbounded and
    compilation would hit torch's recompile limit mid-run."""
    sdpa_backend: str = "auto"
    """Attention kernel: `auto` (PyTorch picks), `flash`, `efficient`, `cudnn` or `math`."""
    tf32: bool = True
    """Allow TF32 matmuls and convolutions on Ampere and newer GPUs (faster float32 work, 10-bit mantissa)."""
    pin_memory: bool = True
    """Pin batch memory so host-to-GPU copies run asynchronously (ignored without CUDA)."""
    fp8: bool = False
    """FP8 training (torchao's float8 training, one dynamic scale per tensor) of the Linear layers inside the blocks
    whose widths are multiples of 16; parameters, optimizer state, EMA and exports keep their dtypes and keys. Needs
    a CUDA GPU of compute capability 8.9 or newer (Ada, Hopper, Blackwell), `perf.precision=bf16` and the `fp8`
    extra (`pip install 'f5lite[fp8]'`); checked before any work. Use it with `perf.compile=true`, as torchao
    advises: the compiler fuses the casts to FP8 into the surrounding kernels, which run uncompiled as passes of
    their own."""
    ac: ACConfig = field(default_factory=ACConfig)
    """Activation checkpointing."""
    memory_budget: float = 1.0
    """Compiler activation memory budget in [0, 1]: 1 keeps what the partitioner would save, lower values make the
    compiled backward recompute more to save memory. Values below 1 need `perf.compile=true`."""
    pack: bool = False
    """Pack each batch's utterances into one sequence with per-utterance attention (DiT only), so the blocks do no
    work on padding. It computes what the padded batch computes with its keys masked, so it needs
    `model.attn_mask_enabled=true`; on a CUDA GPU in bf16/fp16 attention runs varlen flash attention."""
    dropout: str = "auto"
    """Dropout kernel in training: `bits` (four 16-bit masks from one 64-bit random draw, a fifth of torch's cost
    on a CPU; p rounded to 1/65536), `torch` (`nn.Dropout`), or `auto` (`bits` on a CPU without compile)."""

    def __post_init__(self) -> None:
        check_choice("perf.precision", self.precision, PRECISIONS)
        check_choice("perf.compile_mode", self.compile_mode, COMPILE_MODES)
        check_choice("perf.compile_scope", self.compile_scope, COMPILE_SCOPES)
        check_choice("perf.sdpa_backend", self.sdpa_backend, SDPA_BACKENDS)
        check_range("perf.memory_budget", self.memory_budget, 0.0, 1.0)
        check_choice("perf.dropout", self.dropout, DROPOUT_KERNELS)
        if self.dropout == "bits" and self.compile:
            raise ValueError(
                "perf.dropout=bits with perf.compile=true: compiled blocks fuse torch's dropout into their kernels, "
                "which is cheaper; set perf.dropout=auto or torch"
            )
        if self.compile_dynamic is False:
            raise ValueError(
                "perf.compile_dynamic=false is not supported: batch sizes and lengths vary, so per-shape graphs would "
                "exceed torch.compile's recompile limit mid-run; leave it null (dynamic after the first change) or true"
            )
        if self.memory_budget < 1.0 and not self.compile:
            raise ValueError(
                f"perf.memory_budget={self.memory_budget!r} has no effect without perf.compile=true; "
                "set perf.compile=true or leave perf.memory_budget=1.0"
            )
        if self.compile_scope != "blocks" and not self.compile:
            raise ValueError(
                f"perf.compile_scope={self.compile_scope} needs perf.compile=true; set it or leave "
                "perf.compile_scope=blocks"
            )
        if self.precision == PRECISION_AUTO:
            return  # the checks of a resolved precision, last: the trainer's value meets them when it replaces `auto`
        if self.fp8 and self.precision != "bf16":
            # torchao's float8 training is made and tested for bf16 autocast; fp16's loss scaling on top of FP8's
            # own per-tensor scales is not, and fp32 would cast every FP8 result back up for nothing.
            raise ValueError(
                f"perf.fp8=true needs perf.precision=bf16 (torchao's fp8 training runs under bf16 autocast), "
                f"not {self.precision}"
            )
