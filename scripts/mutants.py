"""Plant known bugs in a copy of the package and check that the test suite catches each one.

    python scripts/mutants.py                 # every mutant (make test-mutants)
    python scripts/mutants.py --only B,I      # some of them
    python scripts/mutants.py --list          # what each one plants, and which tests should catch it

Each mutant is one textual change to one source file: a bug that once slipped through, or one a reviewer planted to
probe the tests. For each, the repository (without .venv, .git and run outputs) is copied to a temporary directory,
the change is applied, and the tests that should catch it run against the copy (`PYTHONPATH` points at it, so the
copy shadows the editable install, subprocesses included). A mutant is caught when those tests fail. Before the
mutants, the same tests run once on an unchanged copy: they must pass there, or a "catch" would mean nothing.

When a bug slips through the suite later, add it here with the test that now catches it. Exit status: 0 when every
mutant is caught, 1 otherwise, 2 for a bad command line or a mutant that no longer applies.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_SKIP = (
    ".venv",
    ".f5tts",
    ".git",
    "runs",
    "outputs",
    "build",
    "dist",
    "site",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
)


@dataclass(frozen=True)
class Mutant:
    """One planted bug: `old` (which must occur exactly once in `path`) becomes `new`."""

    key: str
    what: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


TRAINER = "f5lite/train/trainer.py"
TRANSCRIBE_WS = "f5lite/transcribe/workspace.py"
SETUP = "f5lite/train/setup.py"
RESUME = ("tests/train/test_resume.py",)
PACKING = "f5lite/models/packing.py"
PACKING_TESTS = "tests/models/test_packing.py"
SKIP = ("tests/train/test_loop.py::test_non_finite_update_is_skipped_by_optimizer_schedule_and_ema",)
OPTIONS = "tests/train/test_options.py"
COMPILE = "f5lite/models/compile.py"
COMPILE_TESTS = "tests/models/test_compile.py"
FP8 = "f5lite/models/fp8.py"
FP8_TESTS = "tests/models/test_fp8.py"
EXPORT = (
    "tests/train/test_loop.py::test_run_dir_and_its_exports_synthesize_the_same_audio",
    "tests/train/test_loop.py::test_export_of_an_earlier_step_in_bf16",
)

DURATION = "tests/train/test_duration.py"
SAMPLER = "tests/data/test_batching.py"
AUTO = "f5lite/infer/auto.py"
AUTO_TESTS = "tests/infer/test_auto.py"
DROP = "f5lite/models/dropout.py"
DROP_TESTS = "tests/models/test_dropout.py"

STEP_PROFILE = "tests/bench/test_step_profile.py"
RUNNER = "benchmarks/runner.py"
RUNNER_TESTS = "tests/bench/test_runner.py"
CLONE_CORPUS = "scripts/make_clone_corpus.py"
CLONE_CORPUS_TESTS = "tests/data/test_clone_corpus.py"
COMPARE_TRAIN = "tests/compat/test_compare_f5tts_train.py"

MUTANTS = (
    Mutant(
        "A",
        "perf.compile ignored by the trainer",
        SETUP,
        "    if cfg.perf.compile:",
        "    if False:",
        (f"{OPTIONS}::test_compile_through_the_trainer",),
    ),
    Mutant(
        "A2",
        "apply_compile leaves UNetT's blocks alone",
        "f5lite/models/compile.py",
        "    for block in backbone_blocks(backbone):",
        '    for block in backbone_blocks(backbone) if type(backbone).__name__ != "UNetT" else []:',
        (f"{OPTIONS}::test_compile_through_the_trainer",),
    ),
    Mutant(
        "CS1",
        "perf.compile_scope ignored by the training setup (only the blocks compile)",
        SETUP,
        "            scope=cfg.perf.compile_scope,\n",
        "",
        (f"{COMPILE_TESTS}::test_the_training_setup_compiles_the_configured_scope",),
    ),
    Mutant(
        "CS2",
        "compile scope model leaves the text embedding eager",
        COMPILE,
        "        if child is blocks or isinstance(child, RotaryEmbedding):",
        '        if child is blocks or isinstance(child, RotaryEmbedding) or name == "text_embed":',
        (f"{COMPILE_TESTS}::test_model_scope_also_compiles_the_per_step_modules_and_matches_eager",),
    ),
    Mutant(
        "CS3",
        "compile scope model compiles a student's whole backbone as one module instead of its per-step modules",
        COMPILE,
        '            found += [(f"{name}.{inner}", module) for inner, module in per_step_modules(child)]',
        "            found.append((name, child))",
        (f"{COMPILE_TESTS}::test_model_scope_compiles_a_students_step_embedding_and_its_backbones_modules",),
    ),
    Mutant(
        "CS4",
        "perf.compile_scope=model accepted without perf.compile (a flag that does nothing)",
        "f5lite/config/perf.py",
        '        if self.compile_scope != "blocks" and not self.compile:',
        "        if False:",
        (f"{COMPILE_TESTS}::test_compile_scope_is_refused_without_compile_or_unknown",),
    ),
    Mutant(
        "FP1",
        "perf.fp8 accepted on an Ampere GPU (compute capability 8.0), which has no FP8 tensor cores",
        FP8,
        "FP8_MIN_CAPABILITY = (8, 9)",
        "FP8_MIN_CAPABILITY = (8, 0)",
        (f"{FP8_TESTS}::test_gpus_without_fp8_tensor_cores_are_refused_by_name",),
    ),
    Mutant(
        "FP2",
        "apply_fp8 converts Linears whose output width torch._scaled_mm cannot take",
        FP8,
        "        and m.out_features % FP8_ALIGN == 0\n",
        "",
        (f"{FP8_TESTS}::test_only_the_blocks_aligned_token_linears_are_converted",),
    ),
    Mutant(
        "FP3",
        "apply_fp8 converts the AdaLN modulations too (one row per sample)",
        FP8,
        "        and id(m) not in time_fed\n",
        "",
        (f"{FP8_TESTS}::test_only_the_blocks_aligned_token_linears_are_converted",),
    ),
    Mutant(
        "FP4",
        "FP8 matmuls leave the token count unpadded (CUDA's _scaled_mm refuses the weight gradient of most batches)",
        FP8,
        "pad_inner_dim=True",
        "pad_inner_dim=False",
        (f"{FP8_TESTS}::test_matmuls_meet_the_gpu_shape_rules_for_any_batch",),
    ),
    Mutant(
        "FP5",
        "perf.fp8 ignored by the training setup",
        SETUP,
        "    if cfg.perf.fp8:\n        apply_fp8(backbone)\n",
        "",
        (f"{FP8_TESTS}::test_the_training_setup_converts_the_blocks_and_the_ema_stays_fp32",),
    ),
    Mutant(
        "FP6",
        "the training setup never checks where perf.fp8 runs (a CPU run goes on)",
        SETUP,
        "    if cfg.perf.fp8:\n        check_fp8(device)\n",
        "",
        (
            f"{FP8_TESTS}::test_refused_on_a_cpu_in_one_line_before_the_model_is_built",
            f"{FP8_TESTS}::test_the_training_command_refuses_in_one_line",
        ),
    ),
    Mutant(
        "FP7",
        "perf.fp8 accepted with fp16 or fp32 precision",
        "f5lite/config/perf.py",
        '        if self.fp8 and self.precision != "bf16":',
        "        if False:",
        (f"{FP8_TESTS}::test_precision_other_than_bf16_is_refused_with_the_config",),
    ),
    Mutant(
        "B",
        "EMA step reset to 0 on resume",
        TRAINER,
        'step=int(meta["ema_step"])',
        "step=0",
        RESUME,
    ),
    Mutant(
        "C",
        "learning-rate schedule advances on skipped updates",
        TRAINER,
        "factor = lr_factor(self.applied,",
        "factor = lr_factor(self.update,",
        SKIP,
    ),
    Mutant(
        "C2",
        "a non-finite update is applied: the fused optimizer is never told to skip it",
        "f5lite/train/update.py",
        "optimizer.optimizer.found_inf = (~finite).float()",
        "optimizer.optimizer.found_inf = torch.zeros((), device=finite.device)",
        SKIP,
    ),
    Mutant(
        "D",
        "EMA ignores the skip flag",
        TRAINER,
        "self.ema.update(self.network, finite)",
        "self.ema.update(self.network)",
        SKIP,
    ),
    Mutant(
        "D2",
        "EMA decay schedule advances on skipped updates",
        "f5lite/train/ema.py",
        "self.step += flag",
        "self.step += 1",
        SKIP,
    ),
    Mutant(
        "E",
        "perf.ac ignored by the trainer",
        SETUP,
        "apply_ac(backbone, cfg.perf.ac.mode, cfg.perf.ac.every_n)",
        'apply_ac(backbone, "none", cfg.perf.ac.every_n)',
        (f"{OPTIONS}::test_activation_checkpointing_through_the_trainer",),
    ),
    Mutant(
        "E2",
        "perf.ac.every_n ignored by the trainer",
        SETUP,
        "apply_ac(backbone, cfg.perf.ac.mode, cfg.perf.ac.every_n)",
        "apply_ac(backbone, cfg.perf.ac.mode, 1)",
        (f"{OPTIONS}::test_activation_checkpointing_through_the_trainer",),
    ),
    Mutant(
        "E3",
        "apply_ac leaves MMDiT's blocks alone",
        "f5lite/models/ac.py",
        "    for i, block in enumerate(backbone_blocks(backbone)):",
        '    for i, block in enumerate(backbone_blocks(backbone) if type(backbone).__name__ != "MMDiT" else []):',
        (f"{OPTIONS}::test_activation_checkpointing_through_the_trainer",),
    ),
    Mutant(
        "F",
        "gradient accumulation sums the micro-batch losses",
        "f5lite/train/network.py",
        "self.acc.backward(loss / count)",
        "self.acc.backward(loss)",
        (f"{OPTIONS}::test_accumulation_averages_the_micro_batch_gradients",),
    ),
    Mutant(
        "F2",
        "the reported loss of an accumulated update is the sum",
        TRAINER,
        "        return total / len(batches)",
        "        return total",
        (f"{OPTIONS}::test_accumulation_averages_the_micro_batch_gradients",),
    ),
    Mutant(
        "H",
        "new vocabulary rows drawn from N(0, 1)",
        "f5lite/train/finetune.py",
        "state[TEXT_TABLE] = grow_text_table(table, len(data_vocab) + 1, generator)",
        "state[TEXT_TABLE] = torch.cat((table, torch.randn(len(data_vocab) + 1 - table.shape[0], table.shape[1])))",
        ("tests/train/test_finetune.py::test_trainer_grows_the_table_at_the_trained_rows_statistics",),
    ),
    Mutant(
        "I",
        "the checkpoint ignores how many batches the loop consumed",
        TRAINER,
        '"sampler": self.data.sampler.state_dict(self._consumed),',
        '"sampler": self.data.sampler.state_dict(),',
        RESUME,
    ),
    Mutant(
        "I2",
        "a second fit in one process continues where the loader workers were",
        TRAINER,
        "        sampler.seek(self._consumed)",
        "        pass",
        RESUME,
    ),
    Mutant(
        "K",
        "export and model=RUN_DIR use the online weights instead of the EMA",
        "f5lite/storage/model_sources.py",
        "weights = ckpt.tensors[EMA_GROUP]",
        'weights = ckpt.tensors["model"]',
        EXPORT,
    ),
    Mutant(
        "L",
        "LoRA adapters not restored on resume",
        TRAINER,
        "self.network.load_state_dict(read(weights_group) or {}, strict=self.trainable is None)",
        "self.network.load_state_dict(read(weights_group) if self.trainable is None else {}, strict=False)",
        ("tests/train/test_finetune.py::test_lora_trains_adapters_only_resumes_and_merges",),
    ),
    Mutant(
        "M1",
        "loader workers die on the launcher's SIGTERM to the process group",
        "f5lite/data/loader.py",
        "        worker_init_fn=ignore_stop_signals,",
        "",
        ("tests/train/test_faults.py::test_sigterm_to_the_process_group_with_workers_saves_and_resumes_exactly",),
    ),
    Mutant(
        "M2",
        "a stop request is acted on by the rank that saw it only",
        TRAINER,
        "signum = any_rank(stop.signum or 0, self.device)",
        "signum = stop.signum or 0",
        ("tests/train/test_ranks.py::test_a_sigterm_to_one_rank_stops_both_after_the_same_update",),
    ),
    Mutant(
        "M3",
        "a relaunch with another vocab of the same size is not refused",
        "f5lite/storage/rundir.py",
        "        if old_vocab.tokens != vocab.tokens:",
        "        if len(old_vocab) != len(vocab):",
        ("tests/train/test_faults.py::test_a_relaunch_with_another_vocab_is_refused_and_leaves_the_run_dir_as_it_was",),
    ),
    Mutant(
        "M4",
        "a second launch into a live run directory is not refused",
        "f5lite/storage/lock.py",
        '        elif host == me["host"] and alive(pid, start):',
        "        elif False:",
        ("tests/train/test_faults.py::test_a_live_lock_refuses_and_a_stale_one_is_taken_over",),
    ),
    Mutant(
        "M5",
        "the stop-time save waits however long the write takes",
        "f5lite/train/lifecycle.py",
        "done = save(budget) and store.wait(timeout=budget - (time.monotonic() - start))",
        "done = save(1e9) and store.wait()",
        (
            "tests/train/test_faults.py::test_a_stop_time_save_past_its_budget_exits_in_time_and_keeps_the_last_checkpoint",
        ),
    ),
    Mutant(
        "S1",
        "mixed sources drawn in equal shares, whatever their weights",
        "f5lite/data/loader.py",
        "CutSet.mux(*cutsets, weights=self.weights, seed=self.seed + epoch, stop_early=True)",
        "CutSet.mux(*cutsets, weights=None, seed=self.seed + epoch, stop_early=True)",
        ("tests/data/test_batching.py::test_mixed_sources_keep_their_weights_in_the_batches",),
    ),
    Mutant(
        "S2",
        "a resume on another number of ranks uses the epoch's earlier utterances again",
        "f5lite/data/batching.py",
        "        if excluded:\n            cuts = cuts.filter(lambda cut: cut.id not in excluded)",
        "        if False:\n            cuts = cuts.filter(lambda cut: cut.id not in excluded)",
        ("tests/data/test_batching.py::test_a_resume_on_another_number_of_ranks_sees_each_utterance_once",),
    ),
    Mutant(
        "W1",
        "the sampler's window packed in stream order, not sorted by length",
        "f5lite/data/batching.py",
        "        ranked = sorted(range(len(cuts)), key=frames.__getitem__)",
        "        ranked = list(range(len(cuts)))",
        (f"{SAMPLER}::test_little_padding_and_fuller_batches_than_a_sort_of_the_whole_set",),
    ),
    Mutant(
        "W2",
        "a batch takes one utterance past the frame budget",
        "f5lite/data/batching.py",
        "while pool and len(batch) < self._max_samples and spent + costs[-1] <= self._budget:",
        "while pool and len(batch) < self._max_samples and spent <= self._budget:",
        (f"{SAMPLER}::test_no_batch_exceeds_the_budget_and_every_utterance_appears_once",),
    ),
    Mutant(
        "W3",
        "a window's rounds yielded in length order, not shuffled",
        "f5lite/data/batching.py",
        "            order.shuffle(rounds)\n",
        "",
        (f"{SAMPLER}::test_batches_come_in_no_length_order",),
    ),
    Mutant(
        "W4",
        "a window's part-filled last round yielded instead of packed again with the next window",
        "f5lite/data/batching.py",
        "            if not last and (len(rounds[-1]) < world_size or len(rounds[-1][-1]) < self._max_samples):",
        "            if False:",
        (f"{SAMPLER}::test_a_window_leaves_no_part_filled_batch_behind",),
    ),
    Mutant(
        "W5",
        "topping up a batch ignores data.fill_efficiency (any shorter utterance that fits)",
        "f5lite/data/batching.py",
        "                if i < 0 or real + lengths[i] < self._fill * (len(batch) + 1) * top:",
        "                if i < 0:",
        (f"{SAMPLER}::test_little_padding_and_fuller_batches_than_a_sort_of_the_whole_set",),
    ),
    Mutant(
        "W6",
        "a resume on another number of ranks leaves out only rank 0's earlier utterances",
        "f5lite/data/batching.py",
        "                used.update(cut.id for batch in round_ for cut in batch)",
        "                used.update(cut.id for cut in round_[0])",
        (f"{SAMPLER}::test_a_resume_on_another_number_of_ranks_sees_each_utterance_once",),
    ),
    Mutant(
        "W7",
        "the epoch's cut shuffle unseeded (ranks and replays would disagree)",
        "f5lite/data/batching.py",
        '        return random.Random(f"f5lite.data.sampler {purpose} seed={self._seed} epoch={self._epoch}")',
        "        return random.Random()",
        (
            f"{SAMPLER}::test_batches_are_deterministic_in_seed_and_epoch_and_change_between_epochs",
            f"{SAMPLER}::test_a_resume_on_the_same_ranks_continues_exactly",
        ),
    ),
    Mutant(
        "W8",
        "a batch's utterances left in packing order (longest first)",
        "f5lite/data/batching.py",
        "                    order.shuffle(batch)\n",
        "                    pass\n",
        (f"{SAMPLER}::test_a_batch_s_utterances_come_in_no_length_order",),
    ),
    Mutant(
        "V1",
        "validation draws follow the global RNG instead of each utterance's seed",
        "f5lite/train/validation.py",
        "    generator = torch.Generator().manual_seed(utterance_seed(seed, cut_id))",
        "    generator = torch.Generator().manual_seed(torch.seed())",
        ("tests/train/test_validation.py::test_two_evaluations_of_the_same_weights_are_identical",),
    ),
    Mutant(
        "V2",
        "the fixed prompts are spoken with the online weights",
        "f5lite/train/evaluation.py",
        '            start = time.perf_counter()\n            self._load("ema", update, ema_weights)\n\n',
        '            start = time.perf_counter()\n            self._load("online", update, online_weights)\n\n',
        ("tests/train/test_prompts.py::test_prompts_are_spoken_with_the_ema_weights_and_the_run_s_sampler",),
    ),
    Mutant(
        "V3",
        "keep_best keeps the worst checkpoints",
        "f5lite/storage/store.py",
        'sign = 1.0 if score.get("lower_is_better", True) else -1.0',
        'sign = -1.0 if score.get("lower_is_better", True) else 1.0',
        ("tests/train/test_best.py::test_keep_best_keeps_the_lowest_validation_losses_across_a_resume",),
    ),
    Mutant(
        "V4",
        "the mel cepstrum is scaled twice",
        "f5lite/metrics/melmetrics.py",
        "scipy_fft.dct(mel, type=2, axis=-1)",
        'scipy_fft.dct(mel, type=2, axis=-1, norm="ortho")',
        ("tests/metrics/test_metrics.py::test_cepstrum_is_the_cosine_series_of_the_log_mel",),
    ),
    Mutant(
        "DUR1",
        "an export's duration predictor is ignored (the byte rule sizes everything)",
        "f5lite/infer/duration.py",
        'if setting == "auto":\n        return DurationEstimator(own)',
        'if setting == "auto":\n        return DurationEstimator(None)',
        (f"{DURATION}::test_a_predictor_in_the_export_sizes_the_speech_by_default",),
    ),
    Mutant(
        "DUR2",
        "duration=rule does not force the rule",
        "f5lite/infer/duration.py",
        'if setting == "rule":',
        'if setting == "rules":',
        (f"{DURATION}::test_duration_rule_forces_the_byte_ratio_rule",),
    ),
    Mutant(
        "DUR3",
        "a length the user gives is ignored",
        "f5lite/infer/synthesizer.py",
        "        if seconds is not None:\n            totals = _share(",
        "        if False:\n            totals = _share(",
        (f"{DURATION}::test_given_seconds_win_over_predictor_and_speed",),
    ),
    Mutant(
        "DUR4",
        "the predictor trained alongside is left out of the checkpoint",
        "f5lite/train/flow.py",
        "return self.duration.state() if self.duration is not None else ({}, {})",
        "return {}, {}",
        (f"{DURATION}::test_alongside_trains_checkpoints_resumes_exactly_and_exports",),
    ),
    Mutant(
        "DUR5",
        "the same-speaker ratio term is dropped from the loss",
        "f5lite/models/duration.py",
        "    if first:",
        "    if False:",
        ("tests/models/test_duration.py::test_the_pair_term_is_the_log_ratio_error_computed_by_hand",),
    ),
    Mutant(
        "DUR6",
        "a resumed predictor-only run restarts its epoch",
        TRAINER,
        "        self._consumed = self.data.sampler.position",
        "        self._consumed = 0",
        (f"{DURATION}::test_alone_trains_resumes_exactly_and_exports_a_predictor_directory",),
    ),
    Mutant(
        "G1",
        "the final norm's epsilon is 1e-5 instead of F5-TTS's 1e-6 (moves DiT outputs by 8e-5: under the old 1e-4)",
        "f5lite/models/layers.py",
        "nn.Linear(dim, dim * 2)\n        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)",
        "nn.Linear(dim, dim * 2)\n        self.norm = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-5)",
        ("tests/models/test_compat.py::test_fixture_outputs_reproduced",),
    ),
    Mutant(
        "G2",
        "the bigvgan magnitude epsilon is 1e-8 instead of 1e-9",
        "f5lite/audio/mel.py",
        "_BIGVGAN_MAGNITUDE_EPS = 1e-9",
        "_BIGVGAN_MAGNITUDE_EPS = 1e-8",
        ("tests/audio/test_mel.py::test_bigvgan_log_mel_matches_reference_recipe",),
    ),
    Mutant(
        "G3",
        "the flow time is drawn before the noise (F5-TTS draws the noise first)",
        "f5lite/models/cfm.py",
        "    x0 = torch.randn(x1.shape, dtype=x1.dtype, device=device, generator=generator)\n"
        "    time = torch.rand(b, dtype=x1.dtype, device=device, generator=generator)\n",
        "    time = torch.rand(b, dtype=x1.dtype, device=device, generator=generator)\n"
        "    x0 = torch.randn(x1.shape, dtype=x1.dtype, device=device, generator=generator)\n",
        ("tests/models/test_flow_loss.py::test_generator_draws_equal_f5tts_draws_for_the_same_seed",),
    ),
    Mutant(
        "G4",
        "the golden bound of every golden test is a thousand times too loose",
        "tests/support/golden.py",
        "return eps * (ulps * magnitude + range_ulps * scale)",
        "return 1000 * eps * (ulps * magnitude + range_ulps * scale)",
        ("tests/compat/test_golden.py",),
    ),
    Mutant(
        "F0A",
        "the F0 pair count counts the ground truth's voiced frames, not the pairs voiced in both",
        "f5lite/metrics/melmetrics.py",
        '"f0_pairs": int(both.sum())',
        '"f0_pairs": int(voiced_gt[j].sum())',
        ("tests/metrics/test_metrics.py::test_f0_error_is_left_out_when_nothing_is_voiced_in_both",),
    ),
    Mutant(
        "F0B",
        "the report calls an F0 error over exactly F0_FEW_PAIRS pairs noise",
        "f5lite/eval/report.py",
        "pairs < F0_FEW_PAIRS",
        "pairs <= F0_FEW_PAIRS",
        ("tests/eval/test_report.py::test_report_marks_an_f0_error_over_few_voiced_frames_as_noise",),
    ),
    Mutant(
        "F0C",
        "a summary averages the F0 pair counts instead of adding them up",
        "f5lite/metrics/scoring.py",
        "(1 if key in SUMMED_KEYS else len(found))",
        "len(found)",
        ("tests/metrics/test_metrics.py::test_summarize_averages_each_numeric_key_over_the_rows_that_have_it",),
    ),
    Mutant(
        "SBS1",
        "the benchmarks' runner runs every round of a configuration before the next one (no interleaving)",
        RUNNER,
        "    return [(r, name) for r in range(rounds) for name in (names[::-1] if alternate and r % 2 else names)]",
        "    return [(r, name) for name in names for r in range(rounds)]",
        (f"{RUNNER_TESTS}::test_rounds_run_a_b_a_b_each_in_its_own_process",),
    ),
    Mutant(
        "SBS2",
        "the benchmarks' runner never reverses a round (alternate=True ignored)",
        RUNNER,
        "(names[::-1] if alternate and r % 2 else names)",
        "names",
        (f"{RUNNER_TESTS}::test_alternate_reverses_every_other_round",),
    ),
    Mutant(
        "SBS3",
        "the benchmarks' runner goes on past a failed child (check=True ignored)",
        RUNNER,
        "        if check and not run.ok:",
        "        if False:",
        (f"{RUNNER_TESTS}::test_a_failing_child_is_one_line_naming_its_configuration",),
    ),
    Mutant(
        "SBS4",
        "the run header of the results files drops the date",
        "benchmarks/results.py",
        '        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),\n',
        "",
        (f"{RUNNER_TESTS}::test_header_records_machine_versions_and_date",),
    ),
    Mutant(
        "SBS5",
        "results files are written without the machine, versions and date",
        "benchmarks/results.py",
        "        if missing := _missing_header(row):",
        "        if (missing := _missing_header(row)) and False:",
        (f"{RUNNER_TESTS}::test_results_files_must_carry_the_header",),
    ),
    Mutant(
        "REF1",
        "the configuration reference leaves out the keys of nested sections",
        "f5lite/config/reference.py",
        '            rows.extend(_walk(nested, key + ".", section_default))\n',
        "",
        ("tests/project/test_docs.py::test_the_reference_lists_exactly_the_schema_keys_each_documented",),
    ),
    Mutant(
        "REF2",
        "the configuration reference reads field docstrings from the class only, not from its bases",
        "f5lite/config/reference.py",
        "    for cls in reversed(schema.__mro__):",
        "    for cls in (schema,):",
        ("tests/project/test_docs.py::test_the_reference_lists_exactly_the_schema_keys_each_documented",),
    ),
    Mutant(
        "CMP1",
        "a tool's schema is not stored before its config is composed",
        "f5lite/config/compose.py",
        '    ConfigStore.instance().store(name=f"{name}_schema", node=open_structured(schema))\n',
        "",
        ("tests/infer/test_cli.py::test_contract_keys_and_free_text_reach_the_config",),
    ),
    Mutant(
        "AUTO1",
        "dtype=auto picks bf16 on a CPU without native bf16",
        AUTO,
        '        dtype = "bf16" if native else "fp32"',
        '        dtype = "bf16"',
        (f"{AUTO_TESTS}::test_bf16_only_where_the_cpu_has_native_bf16",),
    ),
    Mutant(
        "AUTO2",
        "an explicit dtype is replaced by the automatic choice",
        AUTO,
        "    if dtype == DTYPE_AUTO:\n",
        "    if True:\n",
        (f"{AUTO_TESTS}::test_an_explicit_dtype_wins",),
    ),
    Mutant(
        "AUTO3",
        "threads set to the physical cores although OMP_NUM_THREADS is set",
        AUTO,
        '        if environ.get("OMP_NUM_THREADS"):',
        "        if False:",
        (f"{AUTO_TESTS}::test_threads_physical_cores_unless_omp_num_threads_or_explicit",),
    ),
    Mutant(
        "AUTO4",
        "compile=auto compiles whatever the number of backbone calls",
        "f5lite/infer/synthesizer.py",
        "        if threshold is not None and calls >= threshold:",
        "        if threshold is not None:",
        (f"{AUTO_TESTS}::test_compile_auto_compiles_once_a_text_plans_enough_calls",),
    ),
    Mutant(
        "AUTO5",
        "the chosen dtype is not the one the weights are loaded in",
        "f5lite/infer/synthesizer.py",
        "device=target, dtype=path.dtype)",
        'device=target, dtype="fp32")',
        (f"{AUTO_TESTS}::test_synthesizer_applies_and_exposes_the_path",),
    ),
    Mutant(
        "DROP1",
        "the random words leave their top bit at 0, so one mask in four never drops",
        DROP,
        ".random_(-(1 << 63), None)",
        ".random_()",
        (f"{DROP_TESTS}::test_every_lane_of_a_random_word_drops_at_rate_p",),
    ),
    Mutant(
        "DROP2",
        "kept values scaled by 1 / (1 - p) instead of the inverse of the rounded kept fraction",
        DROP,
        "return dropped - _LEVELS // 2, _LEVELS / (_LEVELS - dropped)",
        "return dropped - _LEVELS // 2, 1.0 / (1.0 - p)",
        (f"{DROP_TESTS}::test_threshold_and_scale_follow_from_p_rounded_to_16_bits",),
    ),
    Mutant(
        "DROP3",
        "the backward pass lets gradient through dropped elements",
        DROP,
        "return torch.where(keep, grad, 0.0).mul_(ctx.scale), None",
        "return grad * ctx.scale, None",
        (f"{DROP_TESTS}::test_backward_passes_gradient_only_through_kept_elements",),
    ),
    Mutant(
        "DROP4",
        "the training setup never applies the configured dropout kernel",
        SETUP,
        "    apply_dropout(backbone, resolve_dropout_kernel(cfg.perf.dropout, device, cfg.perf.compile))\n",
        "",
        (f"{DROP_TESTS}::test_training_setup_uses_the_configured_kernel",),
    ),
    Mutant(
        "ROPE1",
        "the rotary sign on the second channel of a pair instead of the first",
        "f5lite/models/rope.py",
        "torch.stack((-sin_pairs[..., 0], sin_pairs[..., 1]), dim=-1)",
        "torch.stack((sin_pairs[..., 0], -sin_pairs[..., 1]), dim=-1)",
        ("tests/models/test_compat.py",),
    ),
    Mutant(
        "ROPE2",
        "rotary output in the projections' transposed layout, not F5-TTS's contiguous heads",
        "f5lite/models/rope.py",
        "return (swapped * signed_sin + xf * cos).to(x.dtype)",
        "return (xf * cos + swapped * signed_sin).to(x.dtype)",
        ("tests/models/test_rope.py::test_output_is_contiguous_heads_for_the_attention_kernel",),
    ),
    Mutant(
        "EVP1",
        "eval_paths scores each path against the recording instead of the 32-step audio",
        "scripts/eval_paths.py",
        'replace(row, gt_audio=(audio_dir / f"{row.id}.wav").resolve())',
        "replace(row, gt_audio=row.gt_audio)",
        ("tests/eval/test_paths.py::test_reference_testset_points_every_row_at_the_reference_audio",),
    ),
    Mutant(
        "TR1",
        "loading Silero VAD leaves the whole process on one torch thread",
        "f5lite/transcribe/vad.py",
        "    finally:\n        torch.set_num_threads(threads)\n",
        "    finally:\n        pass\n",
        ("tests/transcribe/test_vad.py::test_loading_the_model_leaves_torch_threads_as_they_were",),
    ),
    Mutant(
        "TR2",
        "the samples left over at the end of a block are dropped",
        "f5lite/transcribe/vad.py",
        "                carry = carry[whole:]",
        "                carry = carry[:0]",
        ("tests/transcribe/test_vad.py::test_the_track_covers_the_recording",),
    ),
    Mutant(
        "TR3",
        "a clip's margin reaches past the middle of the pause into the next clip",
        "f5lite/transcribe/slicing.py",
        "max(0.0, first * window - min(settings.margin + ONSET_LEAD, before)),",
        "max(0.0, first * window - settings.margin - ONSET_LEAD),",
        ("tests/transcribe/test_slicing.py::test_margins_never_reach_past_the_middle_of_a_pause",),
    ),
    Mutant(
        "TR4",
        "long speech is cut at its first allowed window, not its quietest",
        "f5lite/transcribe/slicing.py",
        "        quiet = np.flatnonzero(loudness <= loudness.min() + TIE_DB) + lo",
        "        quiet = np.arange(lo, lo + 1)",
        ("tests/transcribe/test_slicing.py::test_long_speech_is_cut_at_its_quietest_window",),
    ),
    Mutant(
        "FLT1",
        "a clip read far slower than its file's median is kept (only too fast is caught)",
        "f5lite/transcribe/filters.py",
        "not median / settings.rate_factor <= clip.rate <= median * settings.rate_factor",
        "not clip.rate <= median * settings.rate_factor",
        ("tests/transcribe/test_filters.py::test_a_rate_far_from_the_files_median_marks_a_wrong_transcript",),
    ),
    Mutant(
        "FLT2",
        "duplicates found only when case and spacing match too",
        "f5lite/transcribe/filters.py",
        'key = " ".join(clip.text.lower().split())',
        "key = clip.text",
        ("tests/transcribe/test_filters.py::test_repeated_text_keeps_the_first_only",),
    ),
    Mutant(
        "PSX1",
        "PocketSphinx's front end adapts from clip to clip: a transcript depends on the clips decoded before it",
        "f5lite/metrics/asr.py",
        "        self._decoder.reinit_feat()\n",
        "",
        ("tests/transcribe/test_recognise.py::test_pocketsphinx_hears_each_clip_as_if_it_were_the_first",),
    ),
    Mutant(
        "TRW1",
        "OUT inside IN is accepted (only OUT == IN refused)",
        TRANSCRIBE_WS,
        "    if out == in_dir or in_dir in out.parents:",
        "    if out == in_dir:",
        ("tests/transcribe/test_workspace.py::test_out_inside_in_is_refused_before_anything_is_written",),
    ),
    Mutant(
        "TRW2",
        "any file inside a finished source's clip folder is accepted as ours",
        TRANSCRIBE_WS,
        "if not (str(rel) in leftovers or (str(rel) in published and _CLIP_FILE.fullmatch(name))):",
        "if not (str(rel) in leftovers or str(rel) in published):",
        ("tests/transcribe/test_workspace.py::test_a_foreign_file_among_the_clips_is_refused",),
    ),
    Mutant(
        "TRW3",
        "the clip folder of a source interrupted between rename and record is not cleared",
        TRANSCRIBE_WS,
        "        shutil.rmtree(out / clip_dir, ignore_errors=True)\n",
        "        pass\n",
        ("tests/transcribe/test_workspace.py::test_an_interrupted_source_is_redone_and_finished_ones_are_not_touched",),
    ),
    Mutant(
        "TRW4",
        "a re-run with other settings mixes clips cut two ways",
        TRANSCRIBE_WS,
        "    changed = sorted(k for k in set(old) | set(settings) if old.get(k) != settings.get(k))",
        "    changed: list[str] = []",
        ("tests/transcribe/test_workspace.py::test_other_settings_are_refused_naming_them",),
    ),
    Mutant(
        "TRW5",
        "finished sources are transcribed again",
        TRANSCRIBE_WS,
        "if keys[path] not in done]",
        "]",
        ("tests/transcribe/test_run.py::test_a_second_run_skips_finished_files_and_retries_failed_ones",),
    ),
    Mutant(
        "TRS1",
        "a clip the filters leave out stays on disk (f5lite-prepare would read it)",
        "f5lite/transcribe/source.py",
        '            (job.staging / f"{name}.wav").unlink()',
        "            pass",
        ("tests/transcribe/test_workspace.py::test_clips_the_filters_leave_out_are_listed_and_not_written",),
    ),
    Mutant(
        "TRC1",
        "f5lite-transcribe exits 0 when no clip was kept",
        "f5lite/transcribe/cli.py",
        'return EXIT_OK if result.report["totals"]["clips_kept"] else EXIT_NOTHING_KEPT',
        "return EXIT_OK",
        ("tests/transcribe/test_cli.py::test_exit_codes_and_one_line_errors",),
    ),
    Mutant(
        "SRV1",
        "requests that arrive together are run one sampler call each",
        "f5lite/serve/engine.py",
        "if task.options == first.options and frames + task.piece.frames <= self._max_frames:",
        "if False:",
        ("tests/serve/test_batching.py::test_requests_that_arrive_together_share_a_sampler_call",),
    ),
    Mutant(
        "SRV2",
        "a full queue admits every request (no 429, memory grows)",
        "f5lite/serve/admission.py",
        "if sum(self._taken.values()) >= self._size:",
        "if False:",
        ("tests/serve/test_batching.py::test_a_full_queue_is_answered_429_with_retry_after_not_a_hang",),
    ),
    Mutant(
        "SRV3",
        "a stream's first piece is a whole chunk (no early audio)",
        "f5lite/serve/speech.py",
        "first = FIRST_BYTES if streaming else None",
        "first = None",
        ("tests/serve/test_api.py::test_a_streamed_response_arrives_in_pieces_and_decodes",),
    ),
    Mutant(
        "SRV4",
        "a wrong API key is accepted",
        "f5lite/serve/guard.py",
        'if not hmac.compare_digest(given, f"Bearer {key}".encode()):',
        "if not given:",
        ("tests/serve/test_api.py::test_a_missing_or_wrong_key_is_refused_but_health_needs_none",),
    ),
    Mutant(
        "SRV5",
        "a voice name may hold a path",
        "f5lite/infer/names.py",
        'NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")',
        'NAME = re.compile(r".{1,64}")',
        ("tests/serve/test_api.py::test_voices_are_added_used_and_deleted_over_http",),
    ),
    Mutant(
        "SRV6",
        "a word longer than a piece's budget is kept whole (a 4,000-character word is one piece of minutes)",
        "f5lite/infer/chunking.py",
        "        return _by_characters(text, max_bytes)",
        "        return [text]",
        ("tests/infer/test_chunking.py::test_no_chunk_is_longer_than_the_budget_however_long_a_word",),
    ),
    Mutant(
        "SRV7",
        "a piece's frames are not capped to the model's window (a duration predictor may ask for minutes)",
        "f5lite/infer/synthesizer.py",
        "            frames = [min(total, window) for total in frames]",
        "            frames = list(frames)",
        (
            "tests/serve/test_stream.py::test_every_piece_fits_the_window_and_the_plan_is_the_length_made",
            "tests/infer/test_window.py::test_a_length_fixed_in_seconds_stays_within_a_window_the_caller_sets",
        ),
    ),
    Mutant(
        "SRV8",
        "a voice's transcript is not checked against its clip (every piece is as long as the transcript's tokens)",
        "f5lite/infer/chunking.py",
        "    if size > MAX_REF_CHARS_PER_SECOND * ref_seconds:",
        "    if False:",
        (
            "tests/infer/test_chunking.py::test_a_reference_transcript_too_long_for_its_clip_is_refused",
            "tests/serve/test_hostile.py::test_a_transcript_far_longer_than_its_clip_is_refused",
        ),
    ),
    Mutant(
        "WIN1",
        "a piece whose frame per text id is over the window is not cut again (speed, phonemes lift it)",
        "f5lite/infer/plan.py",
        "        if lower <= window:\n",
        "        if True:\n",
        (
            "tests/infer/test_window.py::test_speed_does_not_lift_a_piece_over_the_window",
            "tests/infer/test_window.py::test_phonemes_that_outnumber_letters_do_not_lift_a_piece_over_the_window",
            "tests/serve/test_bounds.py::test_speed_does_not_lift_a_piece_over_the_window",
        ),
    ),
    Mutant(
        "WIN2",
        "a reference transcript's whitespace runs are kept: a frame per space lifts every piece of its voice",
        "f5lite/infer/chunking.py",
        '    text = " ".join(ref_text.split())\n',
        "    text = ref_text.strip()\n",
        (
            "tests/infer/test_window.py::test_a_transcripts_whitespace_runs_collapse_and_its_spaces_count",
            "tests/infer/test_window.py::test_spaces_in_a_voice_transcript_do_not_lift_its_pieces",
            "tests/serve/test_bounds.py::test_spaces_in_an_uploaded_transcript_do_not_lift_the_voices_pieces",
        ),
    ),
    Mutant(
        "WIN3",
        "a reference transcript is counted in characters only: its phonemes may outnumber them many times",
        "f5lite/infer/reference.py",
        '        check_ref_text(prepared, seconds, tokens, "tokens")\n',
        "        pass\n",
        ("tests/infer/test_window.py::test_a_transcript_within_its_characters_but_not_its_tokens_is_refused",),
    ),
    Mutant(
        "WIN4",
        "a reference transcript is tokenized before its characters are counted (a huge one is phonemized first)",
        "f5lite/infer/reference.py",
        "    check_ref_text(prepared, seconds)  # characters first",
        "    check_ref_text(prepared, seconds, tokens or len)  # characters first",
        ("tests/infer/test_window.py::test_a_huge_transcript_is_refused_on_its_characters_before_it_is_tokenized",),
    ),
    Mutant(
        "WIN5",
        "the engine queues a piece over its batch budget (the first piece of a batch is run whatever its size)",
        "f5lite/serve/engine.py",
        "        self.check(task.piece)\n",
        "",
        ("tests/serve/test_engine.py::test_a_piece_over_the_batch_budget_is_refused_and_never_queued",),
    ),
    Mutant(
        "WIN6",
        "a duration policy's draw is spoken however long it is (and overflows exp past a float's range)",
        "f5lite/train/duration/grpo.py",
        "math.exp(min(log_frames, math.log(WINDOW_FRAMES)))",
        "math.exp(log_frames)",
        ("tests/train/test_duration_grpo.py::test_a_length_drawn_past_the_window_is_spoken_at_the_window",),
    ),
    Mutant(
        "SRV9",
        "a client gone before its first audio: its generator is closed while still running (an error per leaver)",
        "f5lite/serve/routes/speech.py",
        "            await made\n",
        "            pass\n",
        ("tests/serve/test_stream.py::test_a_client_that_leaves_before_its_first_audio_frees_its_place_at_once",),
    ),
    Mutant(
        "AUD1",
        "a clip's header is not checked: a declared 1 Hz or an hour is decoded and resampled",
        "f5lite/audio/io.py",
        "            check_header(name, rate, int(audio.channels), int(audio.frames), max_seconds)",
        "            pass",
        (
            "tests/audio/test_io.py::test_a_header_outside_the_limits_is_refused_before_decoding",
            "tests/serve/test_hostile.py::test_a_clip_is_refused_on_its_header_before_it_is_decoded",
        ),
    ),
    Mutant(
        "AUD2",
        "samples are decoded past the limit (a header that does not know its length is decoded to the end)",
        "f5lite/audio/io.py",
        "        if limit is not None and frames > limit:",
        "        if False:",
        ("tests/audio/test_io.py::test_the_length_limit_holds_on_the_header_and_while_decoding",),
    ),
    Mutant(
        "AUD3",
        "resampling by a sinc kernel built for the exact ratio (torchaudio's): gigabytes for a 44,101 Hz clip",
        "f5lite/audio/resample.py",
        "    out = soxr.resample(wave.detach().cpu().numpy(), orig_rate, new_rate, quality=QUALITY)",
        '    out = __import__("torchaudio").functional.resample(wave.detach().cpu(), orig_rate, new_rate).numpy()',
        ("tests/serve/test_hostile.py::test_a_one_second_wav_at_44101_hz_costs_little_memory_and_answers_at_once",),
    ),
    Mutant(
        "GRD1",
        "a body's declared length is not checked: the server reads (and waits for) whatever is announced",
        "f5lite/serve/guard.py",
        "        if length is not None and (not length.isdigit() or int(length) > limit):",
        "        if False:",
        ("tests/serve/test_hostile.py::test_bodies_are_capped_before_they_are_read_or_parsed",),
    ),
    Mutant(
        "GRD2",
        "a body sent without a length is read whole, however large",
        "f5lite/serve/guard.py",
        "            if size > limit:",
        "            if False:",
        ("tests/serve/test_hostile.py::test_bodies_are_capped_before_they_are_read_or_parsed",),
    ),
    Mutant(
        "GRD3",
        "a voice upload's form is parsed with Starlette's defaults: a thousand parts are parsed",
        "f5lite/serve/routes/voices.py",
        "form = await request.form(max_files=1, max_fields=2)",
        "form = await request.form()",
        ("tests/serve/test_hostile.py::test_bodies_are_capped_before_they_are_read_or_parsed",),
    ),
    Mutant(
        "GRD4",
        "a client that trickles its body holds its connection for ever",
        "f5lite/serve/guard.py",
        "                message = await asyncio.wait_for(receive(), timeout)",
        "                message = await receive()",
        ("tests/serve/test_hostile.py::test_a_client_that_trickles_its_body_is_answered_408",),
    ),
    Mutant(
        "GRD5",
        "a web page from anywhere may post to the server (no origin check)",
        "f5lite/serve/guard.py",
        "        if origin is not None and origin not in self.settings.allowed_origins:",
        "        if False:",
        ("tests/serve/test_hostile.py::test_a_web_page_from_elsewhere_is_refused",),
    ),
    Mutant(
        "STR1",
        "a client that stops reading keeps its place for ever (writes wait without a time limit)",
        "f5lite/serve/stream.py",
        "                await asyncio.wait_for(send(message), self._send_timeout)",
        "                await send(message)",
        ("tests/serve/test_hostile.py::test_a_client_that_stops_reading_loses_its_place_within_the_timeout",),
    ),
    Mutant(
        "STR2",
        "a request has no deadline: a piece that never comes is waited for",
        "f5lite/serve/speech.py",
        "            wave = await asyncio.wait_for(made, None if deadline is None else max(0.0, deadline - loop.time()))",
        "            wave = await made",
        ("tests/serve/test_stream.py::test_a_request_out_of_time_before_its_first_audio_is_a_504",),
    ),
    Mutant(
        "STR3",
        "a failure after the first audio ends an audio stream cleanly: a short body that looks whole",
        "f5lite/serve/routes/speech.py",
        "                raise StreamCutError(message) from err",
        "                return",
        ("tests/serve/test_stream.py::test_after_the_first_audio_an_audio_stream_is_dropped_not_ended",),
    ),
    Mutant(
        "STR4",
        "a failure after the first audio ends a server-sent-events stream without an error event",
        "f5lite/serve/routes/speech.py",
        '            yield _event({"type": "error", "error": ApiError(500, message, kind="server_error").body()["error"]})',
        "            pass",
        ("tests/serve/test_stream.py::test_after_the_first_audio_sse_ends_with_an_error_event",),
    ),
    Mutant(
        "ADM1",
        "one client address may take every place",
        "f5lite/serve/admission.py",
        "            if self._per_client and self._taken[client] >= self._per_client:",
        "            if False:",
        ("tests/serve/test_hostile.py::test_one_address_holds_at_most_its_share_of_places",),
    ),
    Mutant(
        "ENG1",
        "a piece given up while queued is still claimed: setting its result kills the model's thread",
        "f5lite/serve/engine.py",
        "        return task if task.result.set_running_or_notify_cancel() else None",
        "        return task",
        ("tests/serve/test_stream.py::test_a_piece_waiting_in_the_queue_is_dropped_when_its_request_is_given_up",),
    ),
    Mutant(
        "VOI1",
        "an upload is transcribed in the server's process: the recogniser holds the GIL and every stream stops",
        "f5lite/serve/voices.py",
        "        if self._serving:",
        "        if False:",
        ("tests/serve/test_hostile.py::test_an_upload_being_transcribed_does_not_stop_other_requests",),
    ),
    Mutant(
        "VOI4",
        "the recogniser's process outlives a server that is killed (a worker that waits for work for ever)",
        "f5lite/serve/voices.py",
        '    threading.Thread(target=watch, name="f5lite-recogniser-parent", daemon=True).start()',
        "    pass",
        ("tests/serve/test_hostile.py::test_an_upload_being_transcribed_does_not_stop_other_requests",),
    ),
    Mutant(
        "VOI2",
        "HTTP may delete the operator's own voices",
        "f5lite/serve/voices.py",
        "            if name not in self._uploaded:",
        "            if False:",
        ("tests/serve/test_api.py::test_voices_are_added_used_and_deleted_over_http",),
    ),
    Mutant(
        "VOI3",
        "voice uploads on an address others reach are allowed without a key",
        "f5lite/serve/cli.py",
        "    if args.voice_upload and api_key is None and not _loopback(args.host):",
        "    if False:",
        ("tests/serve/test_hostile.py::test_uploads_on_an_address_others_reach_need_a_key",),
    ),
    Mutant(
        "ENC1",
        "a streamed FLAC's header leaves its length unknown (soundfile refuses it: 'array is too big')",
        "f5lite/serve/encoding.py",
        '        out, self._held, self._flac_done = with_flac_total(self._held, self.samples), b"", True',
        '        out, self._held, self._flac_done = self._held, b"", True',
        ("tests/serve/test_api.py::test_every_response_format_decodes_to_the_expected_length",),
    ),
    Mutant(
        "STU1",
        "a studio name may hold a path",
        "f5lite/infer/names.py",
        "    if not NAME.fullmatch(name):",
        "    if not name:",
        ("tests/studio/test_jobs.py::test_names_and_paths_cannot_leave_their_folder",),
    ),
    Mutant(
        "STU2",
        "a clip path sent back by the page is not kept inside the clips folder",
        "f5lite/studio/names.py",
        "    if path != base and base not in path.parents:",
        "    if False:",
        ("tests/studio/test_jobs.py::test_names_and_paths_cannot_leave_their_folder",),
    ),
    Mutant(
        "STU3",
        "a job's exit status is not read: every ended job reads as done",
        "f5lite/studio/jobs.py",
        'name = "done" if rc == 0 else',
        'name = "done" if True else',
        ("tests/studio/test_jobs.py::test_a_job_ends_with_its_status_and_its_log",),
    ),
    Mutant(
        "STU4",
        "a run trained from a terminal (its lock held) is not shown as running",
        "f5lite/studio/training.py",
        "    if _lock_holder_alive(folder):",
        "    if False:",
        ("tests/studio/test_jobs.py::test_a_run_directory_is_read_as_it_is",),
    ),
    Mutant(
        "STU5",
        "streamed pieces are handed out whole: the cross-faded tail is played twice",
        "f5lite/infer/crossfade.py",
        "        return wave[:keep]",
        "        return wave",
        ("tests/studio/test_speak.py::test_streamed_pieces_are_the_pieces_cross_faded_in_order",),
    ),
    Mutant(
        "TRN1",
        "a recording's clip folder may be a folder of IN's: a retry deletes that folder's clips",
        TRANSCRIBE_WS,
        "        dirs[path.as_posix()] = _free(folders[path.parent], names, taken).as_posix()",
        "        dirs[path.as_posix()] = (folders[path.parent] / path.stem).as_posix()",
        (
            "tests/transcribe/test_workspace.py::test_a_retried_recording_leaves_the_clips_of_a_folder_of_its_name_alone",
            "tests/transcribe/test_workspace.py::test_sources_with_one_stem_get_their_own_folders",
        ),
    ),
    Mutant(
        "TRN2",
        "a folder of IN added later goes inside a finished recording's clip folder",
        TRANSCRIBE_WS,
        "                folders[folder] = _free(folders[folder.parent], chain([folder.name], renamed), taken)",
        "                folders[folder] = folders[folder.parent] / folder.name",
        (
            "tests/transcribe/test_workspace.py::test_a_folder_added_beside_a_finished_recording_of_its_name_gets_a_clip_folder_of_its_own",
        ),
    ),
    Mutant(
        "TRN3",
        "a folder of IN forgets the clip folder its finished sources gave it",
        TRANSCRIBE_WS,
        "            folders.setdefault(folder, clip_folder)",
        "            pass",
        (
            "tests/transcribe/test_workspace.py::test_a_folder_added_beside_a_finished_recording_of_its_name_gets_a_clip_folder_of_its_own",
        ),
    ),
    Mutant(
        "TRN4",
        "no lock on OUT: a second run on the same OUT clears the first's staging",
        TRANSCRIBE_WS,
        "    lock = FolderLock(out, busy).acquire()",
        "    lock = FolderLock(out, busy)",
        (
            "tests/transcribe/test_cli.py::test_a_second_run_on_the_same_out_is_refused_at_once_and_the_first_one_finishes",
        ),
    ),
    Mutant(
        "TRN5",
        "a refused run leaves behind the OUT it created for its lock",
        TRANSCRIBE_WS,
        "            _remove_empty(out, made)",
        "            pass",
        ("tests/transcribe/test_workspace.py::test_a_run_refused_after_taking_outs_lock_removes_the_out_it_made",),
    ),
    Mutant(
        "TRN6",
        "IN inside OUT is not refused",
        TRANSCRIBE_WS,
        "    if out in in_dir.parents:",
        "    if False:",
        ("tests/transcribe/test_workspace.py::test_in_inside_out_is_refused_before_anything_is_written",),
    ),
    Mutant(
        "TRN7",
        "a recording whose name is not UTF-8 aborts the run",
        "f5lite/transcribe/run.py",
        "[p for p in recordings if _utf8(names[p])]",
        "recordings",
        (
            "tests/transcribe/test_cli.py::test_a_file_name_that_is_not_utf8_is_one_failure_and_the_others_are_transcribed",
        ),
    ),
    Mutant(
        "TRN8",
        "IN or OUT whose path is not UTF-8 is not refused",
        "f5lite/transcribe/run.py",
        "        if not _utf8(path):",
        "        if False:",
        ("tests/transcribe/test_workspace.py::test_paths_that_are_not_utf8_are_refused_in_one_line",),
    ),
    Mutant(
        "TRN9",
        "links to nothing and link loops go to the workers, with an unclear message",
        "f5lite/transcribe/run.py",
        '        return f"cannot be read: {err.strerror}"',
        "        return None",
        (
            "tests/transcribe/test_run.py::test_files_no_recording_can_come_from_are_reported_and_the_others_transcribed",
        ),
    ),
    Mutant(
        "STU6",
        "the More overrides field is not allow-listed: run_dir=, hydra.*, data paths reach the trainer",
        "f5lite/studio/overrides.py",
        "        elif not _KEY.fullmatch(key) or key not in ALLOWED:",
        "        elif not _KEY.fullmatch(key):",
        (
            "tests/studio/test_jobs.py::test_more_overrides_are_allow_listed",
            "tests/studio/test_security.py::test_overrides_that_leave_the_allow_list_are_refused_and_nothing_is_written",
        ),
    ),
    Mutant(
        "STU7",
        "an interpolation in a More overrides value is let through (${oc.env:...} reads the studio's secrets)",
        "f5lite/studio/overrides.py",
        '        elif "${" in value:',
        "        elif False:",
        (
            "tests/studio/test_jobs.py::test_more_overrides_are_allow_listed",
            "tests/studio/test_security.py::test_overrides_that_leave_the_allow_list_are_refused_and_nothing_is_written",
        ),
    ),
    Mutant(
        "STU8",
        "the run directory goes to Hydra unquoted: a workspace path with , ' [ breaks (or redirects) training",
        "f5lite/studio/training.py",
        "f\"run_dir={quote(str(run_dir), 'the run directory')}\"",
        'f"run_dir={run_dir}"',
        (
            "tests/studio/test_jobs.py::test_a_plan_becomes_the_trainer_s_overrides",
            "tests/studio/test_security.py::test_one_training_per_project_with_literal_paths_an_allowed_override_and_no_secrets",
        ),
    ),
    Mutant(
        "STU9",
        "quoting does not escape quotes and backslashes: a path with ' does not arrive byte for byte",
        "f5lite/studio/overrides.py",
        '    body = re.sub(r"(\\\\*)\'", lambda m: m.group(1) * 2 + "\\\\\'", literal(value, what))',
        "    body = literal(value, what)",
        ("tests/studio/test_jobs.py::test_a_quoted_path_reaches_hydra_byte_for_byte",),
    ),
    Mutant(
        "STU10",
        "jobs inherit the studio's login and the server's API key",
        "f5lite/studio/jobs.py",
        "if k not in CREDENTIAL_ENV}",
        "if k}",
        (
            "tests/studio/test_jobs.py::test_a_job_does_not_inherit_the_studio_s_secrets",
            "tests/studio/test_security.py::test_one_training_per_project_with_literal_paths_an_allowed_override_and_no_secrets",
        ),
    ),
    Mutant(
        "STU11",
        "the job's lock is not handed to its wrapper: a second start (or a restarted studio) starts it again",
        "f5lite/studio/jobs.py",
        "start_new_session=True, pass_fds=(self.lock.fd,),",
        "start_new_session=True,",
        (
            "tests/studio/test_jobs.py::test_a_job_holds_its_folder_s_lock_so_a_second_start_is_refused_whatever_job_json_says",
            "tests/studio/test_jobs.py::test_one_job_per_folder_and_stop_reaches_the_command",
        ),
    ),
    Mutant(
        "STU12",
        "a training claims its run's folder, not the project's: a studio that lost track of a run starts a second trainer",
        "f5lite/studio/training.py",
        'jobs.Claim(folder / JOB_DIR, lock=project.folder / "runs")',
        "jobs.Claim(folder / JOB_DIR)",
        (
            "tests/studio/test_security.py::test_one_training_per_project_with_literal_paths_an_allowed_override_and_no_secrets",
        ),
    ),
    Mutant(
        "STU13",
        "a process's recorded start is not compared: a reused pid reads as the running job, Stop signals it",
        "f5lite/storage/lock.py",
        '!= "Z" and (start is None or process_start(pid) == start)',
        '!= "Z"',
        (
            "tests/studio/test_jobs.py::test_a_reused_pid_is_not_the_job_and_stop_does_not_signal_it",
            "tests/studio/test_security.py::test_a_reused_pid_reads_as_no_job_and_is_not_signalled",
            "tests/train/test_faults.py::test_a_lock_of_a_pid_now_given_to_another_process_is_stale",
        ),
    ),
    Mutant(
        "STU14",
        "a training's overrides are written before its start is certain: a refused start overwrites the run's",
        "f5lite/studio/training.py",
        "    compose(overrides)\n",
        "    compose(overrides)\n    (folder / JOB_DIR).mkdir(parents=True, exist_ok=True)\n    write_text_atomic(folder / JOB_DIR / OVERRIDES_FILE, json.dumps(overrides))\n",
        (
            "tests/studio/test_security.py::test_one_training_per_project_with_literal_paths_an_allowed_override_and_no_secrets",
        ),
    ),
    Mutant(
        "STU15",
        "Speak's files are not created exclusively: two within one second overwrite each other",
        "f5lite/studio/speak.py",
        "os.O_CREAT | os.O_EXCL | os.O_WRONLY",
        "os.O_CREAT | os.O_WRONLY",
        ("tests/studio/test_speak.py::test_speech_made_in_one_second_keeps_every_file",),
    ),
    Mutant(
        "STU16",
        "the learning rate is not checked on arrival: a NaN from a script reaches the plan",
        "f5lite/studio/tabs/train.py",
        "lr=lim.LEARNING_RATE.check(lr or 0) or None",
        "lr=lr or None",
        ("tests/studio/test_security.py::test_numbers_out_of_range_and_uploads_over_the_limit_are_refused",),
    ),
    Mutant(
        "STU17",
        "--max-upload-mb is not given to Gradio: uploads of any size are taken",
        "f5lite/studio/cli.py",
        "max_file_size=args.max_upload_mb * 1024 * 1024, ",
        "",
        ("tests/studio/test_security.py::test_numbers_out_of_range_and_uploads_over_the_limit_are_refused",),
    ),
    Mutant(
        "STU18",
        "a job's folder is not locked: two starts at once both start (and overwrite job.json)",
        "f5lite/studio/jobs.py",
        "            self.lock.acquire()\n",
        "            self.lock.fd = os.open(self.lock.path, os.O_RDONLY)\n",
        (
            "tests/studio/test_jobs.py::test_concurrent_starts_of_one_job_start_it_once",
            "tests/studio/test_jobs.py::test_a_job_holds_its_folder_s_lock_so_a_second_start_is_refused_whatever_job_json_says",
        ),
    ),
    Mutant(
        "DST1",
        "a new student's step embedding does not start at zero: it is not its teacher",
        "f5lite/models/distill.py",
        "            nn.init.zeros_(last.weight)",
        "            nn.init.normal_(last.weight, std=0.02)",
        ("tests/models/test_distill.py::test_a_new_student_is_its_teacher_whatever_step_and_guidance",),
    ),
    Mutant(
        "DST2",
        "the distillation target's first half step is the whole step: the teacher lands past where it should",
        "f5lite/sampling/distill.py",
        "    grid = torch.stack((time, time + step / 2, time + step))",
        "    grid = torch.stack((time, time + step, time + step))",
        ("tests/models/test_distill.py::test_the_target_is_two_guided_euler_steps_of_the_sampler",),
    ),
    Mutant(
        "DST3",
        "the sampler tells a student the step's start time instead of its size",
        "f5lite/sampling/guidance.py",
        "text_embed=text_embed, step=dt,",
        "text_embed=text_embed, step=t,",
        (
            "tests/models/test_distill.py::test_the_sampler_steps_a_student_once_per_step_with_its_size_and_no_unconditional_pass",
        ),
    ),
    Mutant(
        "DST4",
        "a student export's own sampler settings are ignored: it runs with 32 steps",
        "f5lite/sampling/options.py",
        "    if not own:",
        "    if True:",
        (
            "tests/models/test_distill.py::test_a_student_export_runs_with_its_own_settings_in_every_tool",
            "tests/serve/test_student.py",
        ),
    ),
    Mutant(
        "DST5",
        "the second stage's teacher never follows the student: it stays the first stage's export",
        "f5lite/train/distill.py",
        "        torch._foreach_lerp_([teacher[k] for k in names], online, [weight] * len(names))",
        "        torch._foreach_lerp_([teacher[k] for k in names], online, [weight * 0] * len(names))",
        ("tests/train/test_distill.py::test_the_second_stage_starts_from_the_student_and_its_teacher_averages_it",),
    ),
    Mutant(
        "DST6",
        "a resumed second stage starts its teacher again from the first stage's export",
        "f5lite/train/distill.py",
        "            self.distillation.teacher.load_state_dict(teacher)",
        "            del teacher",
        ("tests/train/test_distill.py::test_a_second_stage_resumes_exactly_with_its_teacher",),
    ),
    Mutant(
        "SYN1",
        "a batched piece is vocoded to the batch's longest length: a short piece gets the padding's frames",
        "f5lite/infer/synthesizer.py",
        "mel[i : i + 1, start : piece.frames]",
        "mel[i : i + 1, start:]",
        ("tests/infer/test_synthesizer.py::test_a_batch_of_pieces_is_each_piece_made_alone",),
    ),
    Mutant(
        "SYN2",
        "a batch is brought back to the loudness of its first piece's reference",
        "f5lite/infer/synthesizer.py",
        "waves.append(restore_rms(wave, piece.reference.rms))",
        "waves.append(restore_rms(wave, pieces[0].reference.rms))",
        ("tests/infer/test_synthesizer.py::test_a_batch_of_pieces_is_each_piece_made_alone",),
    ),
    Mutant(
        "ARG1",
        "f5lite-serve takes a positional model of an earlier version without naming model=",
        "f5lite/serve/config.py",
        '        if "=" not in arg:',
        "        if False:",
        (
            "tests/config/test_sample_args.py::"
            "test_the_server_and_studio_refuse_the_model_spellings_of_earlier_versions_in_one_line",
        ),
    ),
    Mutant(
        "SRV10",
        "the server's sample.seed is dropped: every request draws its noise",
        "f5lite/serve/engine.py",
        "seed=self._seed)",
        "seed=None)",
        ("tests/serve/test_api.py::test_the_server_s_seed_makes_a_request_sound_the_same_every_time",),
    ),
    Mutant(
        "STU19",
        "Speak drops the studio's command-line sampler settings (sway, schedule): only the page's controls apply",
        "f5lite/studio/tabs/speak.py",
        "            self.defaults, steps=",
        "            SamplerOptions(), steps=",
        ("tests/studio/test_app.py::test_speak_streams_and_returns_the_speech_the_library_makes",),
    ),
    Mutant(
        "DST7",
        "the per-sample flow time goes to the wrong rows of the batched guided call",
        "f5lite/sampling/guidance.py",
        "        t2 = t.to(dtype) if t.dim() == 0 else t.to(dtype).repeat(2)",
        "        t2 = t.to(dtype) if t.dim() == 0 else t.to(dtype).repeat_interleave(2)",
        (
            "tests/sampling/test_velocity_field.py::test_per_sample_guidance_and_times_are_each_row_s_own_number",
            "tests/sampling/test_velocity_field.py::test_the_target_takes_the_sampler_s_two_guided_half_steps_per_sample",
            "tests/models/test_distill.py::test_the_target_is_two_guided_euler_steps_of_the_sampler",
        ),
    ),
    Mutant(
        "DST8",
        "per-sample guidance is applied to the wrong samples",
        "f5lite/sampling/guidance.py",
        "        cfg_strength = cfg_strength.view(-1, 1, 1)",
        "        cfg_strength = cfg_strength.flip(0).view(-1, 1, 1)",
        (
            "tests/sampling/test_velocity_field.py::test_per_sample_guidance_and_times_are_each_row_s_own_number",
            "tests/sampling/test_velocity_field.py::test_the_target_takes_the_sampler_s_two_guided_half_steps_per_sample",
            "tests/models/test_distill.py::test_the_target_is_two_guided_euler_steps_of_the_sampler",
        ),
    ),
    Mutant(
        "DST9",
        "the time embedding drops time_extra: a student's step and guidance never reach its backbone",
        "f5lite/models/layers.py",
        "        return embedded if extra is None else embedded + extra.to(embedded.dtype)",
        "        return embedded",
        (
            "tests/models/test_backbone.py::test_time_extra_is_added_to_the_time_embedding",
            "tests/models/test_backbone.py::test_students_sampled_concurrently_with_different_guidance_get_what_each_gets_alone",
        ),
    ),
    Mutant(
        "CALLS1",
        "compile=auto plans with one backbone call per midpoint step (it makes two)",
        "f5lite/sampling/options.py",
        '(2 if self.method == "midpoint" else 1)',
        "1",
        ("tests/sampling/test_options.py::test_backbone_calls_is_what_sample_calls",),
    ),
    Mutant(
        "PCK1",
        "packed attention on the padded-layout path lets each frame attend to the padding of its row",
        PACKING,
        "out = nn.functional.scaled_dot_product_attention(qp, kp, vp, attn_mask=key_mask)",
        "out = nn.functional.scaled_dot_product_attention(qp, kp, vp, attn_mask=None)",
        (
            PACKING_TESTS + "::test_packed_attention_keeps_utterances_apart",
            PACKING_TESTS + "::test_packed_step_has_the_padded_loss_and_gradients",
        ),
    ),
    Mutant(
        "PCK2",
        "the packing's utterance boundaries merge the first two utterances (they would attend to each other)",
        PACKING,
        "cu_seqlens=torch.cat((starts, lengths.sum()[None])).to(torch.int32),",
        "cu_seqlens=torch.cat((starts[:1], starts[2:], lengths.sum()[None])).to(torch.int32),",
        (
            PACKING_TESTS + "::test_pack_mask_places_every_real_frame",
            PACKING_TESTS + "::test_packed_step_has_the_padded_loss_and_gradients",
        ),
    ),
    Mutant(
        "PCK3",
        "rotary positions run on across the packed sequence instead of restarting in each utterance",
        PACKING,
        "positions = torch.arange(total, device=device) - starts.index_select(0, document)",
        "positions = torch.arange(total, device=device)",
        (
            PACKING_TESTS + "::test_pack_mask_places_every_real_frame",
            PACKING_TESTS + "::test_packed_step_has_the_padded_loss_and_gradients",
        ),
    ),
    Mutant(
        "PCK4",
        "every packed frame is modulated with the first utterance's time",
        PACKING,
        "return v[:, None] if packing is None else v.index_select(0, packing.document)[None]",
        "return v[:, None] if packing is None else v[:1]",
        (PACKING_TESTS + "::test_packed_step_has_the_padded_loss_and_gradients",),
    ),
    Mutant(
        "PCK6",
        "the packed modulation's backward gives the whole batch's gradient to the first utterance's time vector",
        PACKING,
        "grad_v = per_frame.new_zeros(v.shape).index_add_(0, document, per_frame).to(v.dtype)",
        "grad_v = per_frame.new_zeros(v.shape).index_add_(0, document * 0, per_frame).to(v.dtype)",
        (PACKING_TESTS + "::test_packed_step_has_the_padded_loss_and_gradients",),
    ),
    Mutant(
        "PCK5",
        "a model whose padded attention sees padding is packed anyway (its function silently changes)",
        "f5lite/config/train_run.py",
        "        if not self.model.attn_mask_enabled:",
        "        if False:",
        (PACKING_TESTS + "::test_config_refuses_packing_before_any_work",),
    ),
    Mutant(
        "SP1",
        "step profile: the GEMM rules come before attention's (flash kernels on cutlass types count as matmuls)",
        "benchmarks/step_profile.py",
        '    ("attention", ("flash", "fmha", "attention", "sdpa", "flex")),\n    ("optimizer", ("adam",)),',
        '    ("optimizer", ("adam",)),\n    ("matmul", ("cutlass",)),\n    ("attention", ("flash", "fmha", "attention", "sdpa", "flex")),',
        (STEP_PROFILE + "::test_kernel_and_operator_names_fall_in_their_category",),
    ),
    Mutant(
        "SP2",
        "step profile: idle gaps from the sum of kernel times, overlapping kernels counted twice",
        "benchmarks/step_profile.py",
        "union_length(((r.start, r.end) for r in work), window)",
        "sum(r.end - r.start for r in work)",
        (STEP_PROFILE + "::test_a_step_splits_into_kernels_ranges_and_idle_gaps",),
    ),
    Mutant(
        "SP3",
        "step profile: the optimizer range is ignored, its kernels counted as elementwise work and GEMMs",
        "benchmarks/step_profile.py",
        '"optimizer" if inside(row, optimizer) else',
        '"optimizer" if False else',
        (STEP_PROFILE + "::test_a_step_splits_into_kernels_ranges_and_idle_gaps",),
    ),
    Mutant(
        "SP4",
        "the benchmark's step marks no optimizer or EMA range for the profile",
        "scripts/bench_train.py",
        "with record_function(ranges[part]) if part in ranges else",
        "with record_function(ranges[part]) if False else",
        (COMPARE_TRAIN + "::test_a_real_cpu_profile_of_the_tiny_model_splits_the_step",),
    ),
    Mutant(
        "SP5",
        "MFU counts FLOPs on padded frames (a packed and a padded step no longer compare)",
        "scripts/bench_train.py",
        "training_flops(backbone, args.mel_lengths, args.text_lengths)",
        "training_flops(backbone, [max(args.mel_lengths)] * len(args.mel_lengths), args.text_lengths)",
        ("tests/bench/test_train.py::test_mfu_counts_the_model_flops_of_the_real_frames",),
    ),
    Mutant(
        "SP6",
        "the training benchmark writes its results only at the end (a device call cut short loses all)",
        "scripts/bench_train.py",
        '            print(f"bench_train.py: {run.failure}", file=sys.stderr, flush=True)\n        document()',
        '            print(f"bench_train.py: {run.failure}", file=sys.stderr, flush=True)',
        (COMPARE_TRAIN + "::test_each_result_is_written_when_it_exists_and_a_failure_stops_nothing",),
    ),
    Mutant(
        "SPK1",
        "the speech corpus's recogniser vocabulary is built from the held-out test sentences too",
        "scripts/make_speak_corpus.py",
        "write_recognizer_vocabulary(out / ASR_DIR, training, order=LM_ORDER, discount=LM_DISCOUNT)",
        "write_recognizer_vocabulary(out / ASR_DIR, training + held_out, order=LM_ORDER, discount=LM_DISCOUNT)",
        ("tests/data/test_speak_corpus.py::test_a_few_sentences_make_a_prepared_folder_a_test_set_and_a_vocabulary",),
    ),
    Mutant(
        "SPK2",
        "the vocoded floor scores the recording itself (no log-mel, no vocoder)",
        "f5lite/eval/floors.py",
        "    return vocoder.decode(mel)[0].float().cpu()",
        "    return wave.float().cpu()",
        ("tests/eval/test_floors.py::test_vocode_is_the_log_mel_decoded_by_the_vocoder",),
    ),
    Mutant(
        "IPA1",
        "an ipa:<language> tokenizer reads every text as American English",
        "f5lite/text/ipa.py",
        "    return language or DEFAULT_LANGUAGE",
        "    return DEFAULT_LANGUAGE",
        ("tests/text/test_ipa.py",),
    ),
    Mutant(
        "CON1",
        "a request head has no deadline: a connection that never finishes its headers is held for ever",
        "f5lite/serve/connections.py",
        "        self._deadline = self.loop.call_later(self.header_timeout, self._too_slow)",
        "        self._deadline = None",
        ("tests/serve/test_connections.py::test_a_request_head_sent_in_part_or_trickled_is_closed_at_its_deadline",),
    ),
    Mutant(
        "CON2",
        "a body is cut only when one piece comes late: a byte a second holds the request as long as it likes",
        "f5lite/serve/guard.py",
        "            timeout = min(pace, left)",
        "            timeout = pace",
        ("tests/serve/test_connections.py::test_a_body_trickled_a_byte_a_second_is_cut_at_its_whole_body_deadline",),
    ),
    Mutant(
        "CON3",
        "at the connection cap no idle connection makes way: idle clients lock every request out",
        "f5lite/serve/connections.py",
        "        waiting = [c for c in self.connections if c.waiting_since is not None]",
        "        waiting = []",
        (
            "tests/serve/test_connections.py::"
            "test_more_idle_connections_than_files_leave_room_for_requests_and_log_no_flood",
        ),
    ),
    Mutant(
        "CON4",
        "the Host header is not checked: after DNS rebinding a web page reads the voices without a key",
        "f5lite/serve/guard.py",
        "        if host is not None and not host_allowed(host, self.settings.allowed_hosts):",
        "        if False:",
        ("tests/serve/test_connections.py::test_only_a_host_this_server_answers_to_is_served",),
    ),
    Mutant(
        "AW1",
        "save_audio hands libsndfile the whole waveform in one write (Ogg Vorbis segfaults from 2.1 M frames)",
        "f5lite/audio/io.py",
        "            for start in range(0, data.shape[0], WRITE_BLOCK_FRAMES):\n"
        "                audio.write(data[start : start + WRITE_BLOCK_FRAMES])\n",
        "            audio.write(data)\n",
        ("tests/audio/test_long_output.py::test_180_s_of_a_lossy_format_is_written_whole_without_a_crash",),
    ),
    Mutant(
        "PREC1",
        "perf.precision=auto picks bf16 on a CPU without native bf16 (emulated: 5 to 10x slower than fp32)",
        "f5lite/train/precision.py",
        '    chosen = "bf16" if native else "no"\n',
        '    chosen = "bf16"\n',
        ("tests/train/test_precision.py::test_auto_is_bf16_only_where_the_cpu_reports_native_bf16",),
    ),
    Mutant(
        "PREC2",
        "a cap on oneDNN below AVX-512 BF16 is ignored (bf16 kept where it is emulated)",
        "f5lite/models/hardware.py",
        "        return bool(self.flags & NATIVE_BF16_FLAGS) and not self.kernel_limit\n",
        "        return bool(self.flags & NATIVE_BF16_FLAGS)\n",
        ("tests/train/test_precision.py::test_auto_is_fp32_where_onednn_is_kept_below_avx512_bf16",),
    ),
    Mutant(
        "PREC3",
        "perf.precision=auto is handed on unresolved (accelerate and the run's config.yaml get 'auto')",
        TRAINER,
        "        if cfg.perf.precision == PRECISION_AUTO:  #",
        "        if False:  #",
        ("tests/train/test_precision.py::test_the_trainer_resolves_auto_once_logs_it_and_records_it",),
    ),
    Mutant(
        "PREC4",
        "an explicit bf16 on a CPU that emulates it runs without a word about its cost",
        "f5lite/train/precision.py",
        '        return PrecisionChoice("bf16", line, warning=True)\n',
        '        return PrecisionChoice("bf16")\n',
        ("tests/train/test_precision.py::test_explicit_bf16_on_an_emulating_cpu_warns_in_one_line",),
    ),
    Mutant(
        "OVR1",
        "a 'More overrides' value is not held to the value grammar: Hydra unescapes $\\{oc.env:...\\} into a resolver",
        "f5lite/studio/overrides.py",
        "            why = value_problem(value)\n",
        "            why = None\n",
        (
            "tests/studio/test_overrides.py::test_values_users_type_are_accepted_and_every_escape_is_refused_naming_the_token",
            "tests/studio/test_overrides.py::test_the_train_button_refuses_escaped_interpolations_and_never_shows_a_secret",
        ),
    ),
    Mutant(
        "OVR2",
        "Resume trusts a run's saved overrides.json (a tampered file runs whatever it holds)",
        "f5lite/studio/training.py",
        "    _start(project, folder, read_overrides(saved), write=False)",
        '    _start(project, folder, json.loads(saved.read_text(encoding="utf-8")), write=False)',
        ("tests/studio/test_overrides.py::test_kept_overrides_are_checked_again_on_resume",),
    ),
    Mutant(
        "OVR3",
        "a saved path is taken whenever Hydra reads it as a string, escaped interpolations included",
        "f5lite/studio/overrides.py",
        '        return isinstance(path, str) and quote(path, "the path") == value',
        "        return isinstance(path, str)",
        ("tests/studio/test_overrides.py::test_kept_overrides_are_checked_again_on_resume",),
    ),
    Mutant(
        "IPA2",
        "espeak-ng is called from several threads at once: a request can get another's phonemes",
        "f5lite/text/ipa.py",
        "    with _ESPEAK_LOCK:  # per text",
        "    with threading.Lock():  # per text",
        ("tests/text/test_ipa.py::test_threads_each_get_their_own_texts_phonemes",),
    ),
    Mutant(
        "IPA3",
        'only the first line phonemizer answers for a text is kept ("1.1." loses its second number)',
        "f5lite/text/ipa.py",
        '    return " ".join(" ".join(lines).split())',
        '    return " ".join(lines[0].split())',
        ("tests/text/test_ipa.py::test_a_text_phonemizer_answers_in_several_lines_stays_one_text",),
    ),
    Mutant(
        "FIT1",
        "spread text: the frames are shared out by the padded length, not each utterance's own",
        "f5lite/models/text_embed.py",
        "        length = torch.full_like(pad[:, 0], seq_len, dtype=torch.long) if lens is None else lens.long()",
        "        length = torch.full_like(pad[:, 0], seq_len, dtype=torch.long)",
        ("tests/models/test_text_fit.py",),
    ),
    Mutant(
        "FIT2",
        "spread text: the batch's padded tokens are counted as text",
        "f5lite/models/text_embed.py",
        "        tokens = (~pad).sum(dim=1)",
        "        tokens = torch.full_like(pad[:, 0], text.shape[1], dtype=torch.long)",
        ("tests/models/test_text_fit.py",),
    ),
    Mutant(
        "FIT3",
        "spread text: frames past an utterance's end keep a token",
        "f5lite/models/text_embed.py",
        "        return out.masked_fill((frames[None, :] >= length[:, None])[..., None], 0.0)",
        "        return out",
        ("tests/models/test_text_fit.py",),
    ),
    Mutant(
        "FIT4",
        "a spread model is exported in F5-TTS's format, which would read its text padded",
        "f5lite/train/export.py",
        '    if fit != "pad":',
        "    if False:",
        ("tests/train/test_speak_recipes.py",),
    ),
    Mutant(
        "FIT5",
        "an IPA model is exported in F5-TTS's format, which would look its phonemes up as letters",
        "f5lite/train/export.py",
        '    if tokenizer_family(cfg.data.tokenizer) == "ipa":',
        "    if False:",
        ("tests/train/test_speak_recipes.py",),
    ),
    Mutant(
        "GRPO1",
        "a sign error in GRPO's advantages: the samples that scored worse than their group are pushed up",
        "f5lite/train/grpo.py",
        "    return (rewards - mean) / (spread + eps)",
        "    return (mean - rewards) / (spread + eps)",
        ("tests/train/test_grpo.py", "tests/train/test_duration_grpo.py"),
    ),
    Mutant(
        "GRPO2",
        "GRPO's loss without its KL term: nothing holds the policy near its starting weights",
        "f5lite/train/grpo.py",
        "    return (-advantages * ratio + beta * kl).mean()",
        "    return (-advantages * ratio).mean()",
        ("tests/train/test_grpo.py", "tests/train/test_duration_grpo.py"),
    ),
    Mutant(
        "GRPO3",
        "the SDE's score term with the wrong sign: its samples no longer follow the ODE's marginals",
        "f5lite/sampling/sde.py",
        "    drift = v - 0.5 * noise_level**2 * (1 - t) * (x - t * v)",
        "    drift = v + 0.5 * noise_level**2 * (1 - t) * (x - t * v)",
        ("tests/sampling/test_sde.py",),
    ),
    Mutant(
        "GRPO4",
        "GRPO's takes each start from their own noise: a group's rewards differ by luck no trained step caused",
        "f5lite/train/grpo.py",
        "        x0 = x0.repeat_interleave(1 if flow else s.group, dim=0)\n",
        "        x0 = torch.randn_like(x0.repeat_interleave(1 if flow else s.group, dim=0))\n",
        ("tests/train/test_grpo.py",),
    ),
    Mutant(
        "GRPO5",
        "the rollout's steps past the stochastic window draw noise too: takes part in steps no loss is computed on",
        "f5lite/sampling/ode.py",
        "        if noise_level > 0 and (stochastic_steps is None or i < stochastic_steps):",
        "        if noise_level > 0:",
        ("tests/sampling/test_sde.py",),
    ),
    Mutant(
        "SOLVE1",
        "GRPO's rollouts step with Euler whatever the user's sampler method: the takes are not the sampler's",
        "f5lite/train/grpo.py",
        "            self.transformer, frame, ids, x0, self.options,",
        "            self.transformer, frame, ids, x0, dataclasses.replace(self.options, method='euler'),",
        ("tests/train/test_grpo.py::test_a_rollout_without_noise_is_what_the_sampler_gives_users_bit_for_bit",),
    ),
    Mutant(
        "SOLVE2",
        "the midpoint step evaluates its second velocity at the step's start: first order, not second",
        "f5lite/sampling/ode.py",
        "    return x + span * field(t + half, x + _per_sample(half, x) * field(t, x, half), dt)",
        "    return x + span * field(t, x + _per_sample(half, x) * field(t, x, half), dt)",
        ("tests/sampling/test_ode.py",),
    ),
    Mutant(
        "SOLVE3",
        "a grid per sample steps every sample by the first sample's step size",
        "f5lite/sampling/ode.py",
        "    return value.view(-1, *([1] * (x.dim() - 1))).to(x.dtype)",
        "    return value[0].to(x.dtype)",
        ("tests/sampling/test_ode.py::test_a_grid_per_sample_steps_each_sample_on_its_own_times",),
    ),
    Mutant(
        "SOLVE4",
        "the duration RL speaks its takes from noise of its own: the start it drew is not what the sampler steps",
        "f5lite/infer/synthesizer.py",
        "lens=lens, noise=noise, seed=seed)",
        "lens=lens, seed=seed)",
        ("tests/train/test_duration_grpo.py",),
    ),
    Mutant(
        "GRPO6",
        "the flow likelihood with the wrong sign: a take's flow-matching loss counted as its log-probability",
        "f5lite/train/grpo.py",
        "    return -masked_mean((v - (x1 - x0).float()) ** 2, span), ",
        "    return masked_mean((v - (x1 - x0).float()) ** 2, span), ",
        ("tests/train/test_grpo.py",),
    ),
    Mutant(
        "GRPO7",
        "`grpo.advantages=positive` ignored: the takes below their group's mean push the model away as GRPO's do",
        "f5lite/train/grpo.py",
        "            advantages = advantages.clamp(min=0.0)\n",
        "            advantages = advantages.clamp(min=-1e9)\n",
        ("tests/train/test_grpo.py::test_positive_advantages_pull_towards_the_better_take_and_push_from_none",),
    ),
    Mutant(
        "GRPO8",
        "`grpo.data_weight` ignored: nothing holds the policy to the training data",
        "f5lite/train/grpo.py",
        "            loss = loss + s.data_weight * self._data[0](x1, text, lens, generator=generator)\n",
        "            loss = loss + 0 * self._data[0](x1, text, lens, generator=generator)\n",
        ("tests/train/test_grpo.py::test_the_data_weight_adds_the_flow_objective_on_the_training_batch",),
    ),
    Mutant(
        "DGRPO1",
        "the duration policy's log-probability with the wrong sign: the lengths that scored better are moved from",
        "f5lite/train/duration/grpo.py",
        "        log_prob = (-((drawn - mean[:, None]) ** 2) / (2 * variance)).view(-1)\n",
        "        log_prob = (((drawn - mean[:, None]) ** 2) / (2 * variance)).view(-1)\n",
        ("tests/train/test_duration_grpo.py",),
    ),
    Mutant(
        "DGRPO2",
        "the duration policy without its KL term: nothing holds the predictor near the one it started from",
        "f5lite/train/duration/grpo.py",
        "        kl = ((mean - mean_ref) ** 2 / (2 * variance)).repeat_interleave(s.group)\n",
        "        kl = (0 * mean).repeat_interleave(s.group)\n",
        ("tests/train/test_duration_grpo.py",),
    ),
    Mutant(
        "DGRPO3",
        "the duration policy's takes each start from their own noise: a group's rewards differ by more than length",
        "f5lite/train/duration/grpo.py",
        "noise=starts.repeat_interleave(drawn.shape[1], 0)",
        "noise=torch.randn_like(starts.repeat_interleave(drawn.shape[1], 0))",
        ("tests/train/test_duration_grpo.py",),
    ),
    Mutant(
        "CLONE1",
        "a held-out voice reads training clips (the model heard the voice it is then asked to clone)",
        CLONE_CORPUS,
        '    train_voices, held_voices = voices_of("train"), voices_of("held_out")\n',
        '    train_voices, held_voices = voices_of("train") + voices_of("held_out")[:1], voices_of("held_out")\n',
        (CLONE_CORPUS_TESTS,),
    ),
    Mutant(
        "CLONE2",
        "test sentences read in training clips (the held-out sentences are not held out)",
        CLONE_CORPUS,
        'f"{training[i]} {training[i + 1]}"',
        'f"{training[i]} {test_sentences[i % len(test_sentences)]}"',
        (CLONE_CORPUS_TESTS,),
    ),
    Mutant(
        "CLONE3",
        "a held-out voice is a training voice's engine voice (a copy of one with another name)",
        CLONE_CORPUS,
        'CloneVoice("slt", "flite", "slt", "held_out"',
        'CloneVoice("slt", "flite", "awb", "held_out"',
        (CLONE_CORPUS_TESTS,),
    ),
    Mutant(
        "CLONE4",
        "the out-of-template test sentences are drawn from the training templates",
        CLONE_CORPUS,
        "        sentence = make_sentence(rng, words, EXTRA_TEMPLATES)\n",
        "        sentence = make_sentence(rng, words)\n",
        (CLONE_CORPUS_TESTS,),
    ),
    Mutant(
        "CLONE5",
        "the calibration's two means swapped (1 reads as two different voices, 0 as one voice)",
        "f5lite/metrics/cloning.py",
        "        return (sim - self.between) / (self.same - self.between)",
        "        return (sim - self.same) / (self.between - self.same)",
        ("tests/metrics/test_cloning.py::test_calibration_on_hand_made_embeddings",),
    ),
    Mutant(
        "CLONE6",
        "identification against the row's own voice only (every output is 'identified' as its voice)",
        "f5lite/metrics/cloning.py",
        "    scores = speaker_scores(embedding, centroids)",
        "    scores = speaker_scores(embedding, {voice: centroids[voice]})",
        (
            "tests/metrics/test_cloning.py::test_identification_is_among_every_enrolled_voice_not_the_row_s_own",
            "tests/eval/test_cloning.py::test_rows_and_their_floors_are_identified_among_every_enrolled_voice",
        ),
    ),
    Mutant(
        "CLONE7",
        "the equal error rate counts a target scored at the threshold as rejected",
        "f5lite/metrics/cloning.py",
        "    false_reject = torch.searchsorted(target.sort().values, thresholds).double() / target.numel()",
        "    false_reject = torch.searchsorted(target.sort().values, thresholds, right=True).double() / target.numel()",
        ("tests/metrics/test_cloning.py::test_eer_on_hand_made_scores",),
    ),
    Mutant(
        "CLONE8",
        "a lengthened prompt joins prompts of another voice (the reference-length lever measures something else)",
        "scripts/eval_paths.py",
        "        own = prompts[str(row.voice)]\n",
        "        own = [p for voice in prompts.values() for p in voice]\n",
        (CLONE_CORPUS_TESTS,),
    ),
    Mutant(
        "OBJ1",
        "a setting only another objective reads is ignored rather than refused",
        "f5lite/config/objective.py",
        "        if objective not in readers and settings[key] != defaults[key]:",
        "        if False:",
        ("tests/config/test_objective.py::test_a_setting_no_chosen_objective_reads_is_refused_in_one_line",),
    ),
    Mutant(
        "OBJ2",
        "a run directory of before `objective` that trained the predictor alone loads as a flow run",
        "f5lite/config/objective.py",
        '        objective = REMOVED[duration["train"]]',
        '        objective = "flow"',
        ("tests/config/test_objective.py::test_a_run_directory_of_before_objective_loads_with_its_objective_inferred",),
    ),
    Mutant(
        "OBJ3",
        "the loop never calls the objective's per-update hook (a predictor alongside never steps)",
        TRAINER,
        "        self.objective.after_step(finite)\n",
        "",
        (f"{DURATION}::test_alongside_trains_checkpoints_resumes_exactly_and_exports",),
    ),
    Mutant(
        "control",
        "optimizer state not restored on resume",
        TRAINER,
        "self.optimizer.load_state_dict(unflatten(meta[optimizer_group], read(optimizer_group) or {}))",
        "pass",
        RESUME,
    ),
)


def copy_repo(dest: Path) -> Path:
    """Copy the repository's sources, configs and tests into `dest/repo`."""
    target = dest / "repo"
    shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(*_SKIP))
    return target


def mutated(mutant: Mutant, repo: Path) -> str:
    """The text of the mutant's file in `repo` with the bug planted.

    Raises:
        ValueError: its file is gone, or its text does not occur exactly once (the source moved on: update it).
    """
    if not (repo / mutant.path).is_file():
        raise ValueError(f"mutant {mutant.key}: {mutant.path} is no file (moved or renamed? re-point the mutant)")
    text = (repo / mutant.path).read_text()
    count = text.count(mutant.old)
    if count != 1:
        raise ValueError(f"mutant {mutant.key}: {mutant.old!r} occurs {count} times in {mutant.path}, not once")
    return text.replace(mutant.old, mutant.new)


def missing_test(nodeid: str, repo: Path = ROOT) -> str | None:
    """Why the test a mutant names would not run (one line), or None when pytest will collect and run it.

    A node id is `FILE`, `FILE::test_name` or `FILE::TestClass::test_name`, with an optional `[parameters]` suffix.
    Read with `ast`, nothing imported: the file must exist under tests/, each name must be a test function (or class)
    defined at that level, and a test marked `gpu` would be deselected by `run_tests` and so never catch anything.
    Without this a renamed test makes pytest exit 4 ("not found") and the mutant only shows as an ERROR when the
    mutants run, and a test moved into a helper is silently never collected.
    """
    file, *names = nodeid.split("::")
    path = repo / file
    if not file.startswith("tests/") or path.suffix != ".py" or not path.is_file():
        return f"{nodeid}: no test file {file}"
    scope: list[ast.stmt] = ast.parse(path.read_text(encoding="utf-8"), filename=file).body
    node: ast.stmt | None = None
    for name in (n.split("[")[0] for n in names):
        kinds = (ast.ClassDef,) if name.startswith("Test") else (ast.FunctionDef, ast.AsyncFunctionDef)
        node = next((n for n in scope if isinstance(n, kinds) and n.name == name), None)
        if node is None or not name.lower().startswith("test"):
            return f"{nodeid}: no test {name!r} in {file} (renamed or moved? re-point the mutant)"
        scope = node.body if isinstance(node, ast.ClassDef) else []
    if node is not None and any("gpu" in ast.unparse(d) for d in getattr(node, "decorator_list", [])):
        return f"{nodeid}: marked gpu, which the mutants deselect (-m 'not gpu'): it can catch nothing"
    return None


def stale(mutant: Mutant, repo: Path = ROOT) -> list[str]:
    """Everything that keeps a mutant from meaning what it says: its file, its text, its tests (empty when none)."""
    problems = []
    try:
        planted = mutated(mutant, repo)
        if planted == (repo / mutant.path).read_text():
            problems.append(f"mutant {mutant.key}: its new text is its old one: it plants nothing")
        elif mutant.path.endswith(".py"):
            compile(planted, mutant.path, "exec")
    except (ValueError, SyntaxError) as err:
        problems.append(str(err) if isinstance(err, ValueError) else f"mutant {mutant.key}: does not compile: {err}")
    if not mutant.tests:
        problems.append(f"mutant {mutant.key}: names no test that should catch it")
    problems += [f"mutant {mutant.key}: {why}" for test in mutant.tests if (why := missing_test(test, repo))]
    return problems


def run_tests(repo: Path, tests: tuple[str, ...]) -> tuple[int, float, str]:
    """Run pytest on `tests` against the copy; returns (exit status, seconds, last output lines)."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "not gpu", *tests]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
    return proc.returncode, time.perf_counter() - start, tail


def check_shadowing(repo: Path) -> None:
    """Make sure the copy's packages (f5lite, benchmarks), not the editable install's, are what the tests import."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    code = "import benchmarks, f5lite; print(f5lite.__file__); print(benchmarks.__file__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True).stdout
    if not out or not all(line.startswith(str(repo)) for line in out.splitlines()):
        raise SystemExit(f"mutants: the copy does not shadow the installed packages (imported {out.split()})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="comma-separated mutant keys (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--no-baseline", action="store_true", help="skip the run on the unchanged copy")
    args = parser.parse_args(argv)
    chosen = list(MUTANTS)
    if args.only:
        keys = [k.strip() for k in args.only.split(",") if k.strip()]
        unknown = sorted(set(keys) - {m.key for m in MUTANTS})
        if unknown:
            parser.error(f"--only names unknown mutants: {', '.join(unknown)}")
        chosen = [m for m in MUTANTS if m.key in keys]
    if args.list:
        for m in chosen:
            print(
                f"{m.key:8} {m.what}\n{'':8} {m.path}: {m.old.strip()!r} -> {m.new.strip()!r}\n{'':8} {' '.join(m.tests)}"
            )
        return 0
    with tempfile.TemporaryDirectory(prefix="f5lite-mutants-") as tmp:
        pristine = copy_repo(Path(tmp) / "pristine")
        check_shadowing(pristine)
        # Every mutant must still apply to today's source and name tests that exist: a rename or a move is an error
        # here, not a skipped mutant nor one "caught" because pytest could not find its test.
        if problems := [p for m in chosen for p in stale(m, pristine)]:
            print("\n".join(f"mutants: {p}" for p in problems), file=sys.stderr)
            return 2
        if not args.no_baseline:
            tests = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
            status, seconds, tail = run_tests(pristine, tests)
            if status != 0:
                print(f"mutants: the tests fail without any mutant ({seconds:.0f} s):\n{tail}", file=sys.stderr)
                return 1
            print(f"baseline  the {len(tests)} test selections pass unchanged ({seconds:.0f} s)", flush=True)
        caught = 0
        for m in chosen:
            repo = copy_repo(Path(tmp) / m.key)
            (repo / m.path).write_text(mutated(m, repo))
            status, seconds, tail = run_tests(repo, m.tests)
            verdict = "caught" if status == 1 else "MISSED" if status == 0 else f"ERROR({status})"
            caught += status == 1
            print(f"{m.key:8} {verdict:9} {m.what} ({seconds:.0f} s)", flush=True)
            if status not in (0, 1):
                print(f"{'':18} {tail}", flush=True)
            shutil.rmtree(repo, ignore_errors=True)
    print(f"total: {caught} of {len(chosen)} mutants caught, {len(chosen) - caught} not")
    return 0 if caught == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
