# f5lite developer commands. `make help` lists them.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_FLAGS ?=
# This machine's pip config names local package folders that do not all exist; pip warns once per package.
PIP_NOISE := is ignored: it is neither a file nor a directory

.DEFAULT_GOAL := help
.PHONY: help install test test-heavy test-golden test-slow test-gpu test-browser test-mutants speak-corpus clone-corpus bench-speaks bench-clone bench-reward demo bench bench-gpu docs lint fmt typecheck wheel-check clean

help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip 2>&1 | { grep -v "$(PIP_NOISE)" || true; }
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev,zh,ipa,eval,transcribe,serve,studio,fp8]' 2>&1 | { grep -v "$(PIP_NOISE)" || true; }
	$(BIN)/pip install --quiet --no-deps 'resemblyzer==0.1.4' 2>&1 | { grep -v "$(PIP_NOISE)" || true; }
	touch $(STAMP)

install: $(STAMP) ## Make .venv and install f5lite editable with the dev, zh, ipa, eval, transcribe, serve, studio and fp8 extras (torch pinned by constraints.txt)

# Two workers, a test file each at a time (its module fixtures, servers and studios, start once): many tests wait on
# processes and sockets, so the suite takes about 0.8 of its serial time on two cores.
TEST_WORKERS ?= 2
# espeak-ng (the ipa tokenizer, the speech corpus) from Debian's packages when missing, as root or through sudo; where
# it cannot be installed, the tests that need it skip and say so.
ESPEAK := /usr/bin/espeak-ng
ESPEAK_LOG := build/espeak-install.log
test: $(STAMP) ## Run the CPU test suite (installs first when needed, espeak-ng too) on TEST_WORKERS workers
	@scripts/apt_install.sh $(ESPEAK) espeak-ng $(ESPEAK_LOG) warn "make test"
	$(BIN)/python -m pytest -m "not slow and not gpu and not heavy" -n $(TEST_WORKERS) --dist loadfile $(PYTEST_FLAGS)

# The end-to-end runs of 15 s or more, kept out of `make test` so that it stays under 10 minutes; CI runs both. The
# clone corpus's engines (flite, festival) are installed here too, so that its heavy tests run rather than skip.
test-heavy: $(STAMP) ## Run the heavy end-to-end CPU tests (a training, a killed process, the studio, a recogniser)
	@scripts/apt_install.sh $(ESPEAK) espeak-ng $(ESPEAK_LOG) warn "make test-heavy"
	@scripts/apt_install.sh /usr/bin/flite flite $(CLONE_LOG) warn "make test-heavy"
	@scripts/apt_install.sh /usr/bin/text2wave "festival festvox-kallpc16k festvox-kdlpc16k" $(CLONE_LOG) warn "make test-heavy"
	$(BIN)/python -m pytest -m "heavy and not slow and not gpu" -n $(TEST_WORKERS) --dist loadfile $(PYTEST_FLAGS)

# F5-TTS's own code beside ours (not a dependency: installed into its own folder, without its dependencies, which
# f5lite's environment already has), so that the cross-implementation tests run rather than skip.
F5TTS_DIR := .f5tts
F5TTS_PACKAGES := f5-tts==1.1.22 x-transformers==2.31.10 torchdiffeq==0.2.5 ema-pytorch==0.8.3 loguru==0.7.3 \
	einx==0.4.3 frozendict==2.5.1 torch-einops-utils==0.2.0 rjieba==0.2.2
$(F5TTS_DIR)/.installed: $(STAMP)
	rm -rf $(F5TTS_DIR)
	$(BIN)/pip install --quiet --no-deps --target $(F5TTS_DIR) $(F5TTS_PACKAGES) 2>&1 | { grep -v "$(PIP_NOISE)" || true; }
	touch $@

# Kernel sets for test-golden: "native" is the one torch picks for this CPU; a set the CPU lacks is skipped.
GOLDEN_KERNELS ?= native default
# One inductor cache per kernel set: torch keys the C++ it caches without ATEN_CPU_CAPABILITY, so code generated for this
# CPU's vector ISA by an earlier run would be reused, and fail to build, under the portable kernels.
test-golden: $(STAMP) $(F5TTS_DIR)/.installed ## Golden and cross-implementation tests beside F5-TTS, under each of GOLDEN_KERNELS (native default avx2 avx512)
	@for kernels in $(GOLDEN_KERNELS); do \
		if [ "$$kernels" = avx512 ] && ! grep -qw avx512f /proc/cpuinfo; then echo "skip avx512: this CPU lacks AVX-512"; continue; fi; \
		if [ "$$kernels" = avx2 ] && ! grep -qw avx2 /proc/cpuinfo; then echo "skip avx2: this CPU lacks AVX2"; continue; fi; \
		echo "golden tests under ATEN_CPU_CAPABILITY=$$kernels"; \
		if [ "$$kernels" = native ]; then kernel_env="-u ATEN_CPU_CAPABILITY"; else kernel_env="ATEN_CPU_CAPABILITY=$$kernels"; fi; \
		env $$kernel_env PYTHONPATH=$(F5TTS_DIR) TORCHINDUCTOR_CACHE_DIR=$(CURDIR)/build/inductor-$$kernels \
			$(BIN)/python -m pytest -m "golden and not slow and not gpu" $(PYTEST_FLAGS) || exit 1; \
	done

# The browser tests are slow-marked too; test-browser runs them, test-slow leaves them out.
BROWSER_TESTS := tests/eval/test_report_browser.py tests/studio/test_browser.py
test-slow: $(STAMP) ## Run the slow tests (but the browser tests: test-browser)
	$(BIN)/python -m pytest -m "slow and not gpu" $(addprefix --ignore=,$(BROWSER_TESTS)) $(PYTEST_FLAGS) \
		|| test $$? -eq 5  # 5: none selected

test-gpu: $(STAMP) ## Run the GPU tests (needs CUDA)
	$(BIN)/python -m pytest -m gpu $(PYTEST_FLAGS) || test $$? -eq 5  # 5: none selected

# The system's Chromium, the one the browser tests start (Playwright downloads nothing): installed from Debian's
# packages when it is missing, as root or through sudo; the apt log goes to build/chromium-install.log.
# F5LITE_REQUIRE_BROWSER=1: a missing Chromium, Playwright or eval backend fails the browser tests rather than skips them.
CHROMIUM := /usr/bin/chromium
CHROMIUM_LOG := build/chromium-install.log
test-browser: $(STAMP) ## Open an f5lite-eval report and drive f5lite-studio in headless Chromium (installs Debian's chromium when missing)
	@scripts/apt_install.sh $(CHROMIUM) chromium $(CHROMIUM_LOG) fail test-browser
	F5LITE_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -m slow $(BROWSER_TESTS) -s $(PYTEST_FLAGS)

# The README's pictures of the studio: its browser test, whose screenshots (kept in build/test-artifacts/) then also
# replace docs/images/studio-*.png (tracked; commit them when the page changed on purpose). A plain test run does not.
.PHONY: docs-screenshots
docs-screenshots: $(STAMP) ## Drive f5lite-studio in headless Chromium and copy its screenshots into docs/images/ (the README's pictures)
	@scripts/apt_install.sh $(CHROMIUM) chromium $(CHROMIUM_LOG) fail docs-screenshots
	F5LITE_REQUIRE_BROWSER=1 F5LITE_DOCS_SCREENSHOTS=1 $(BIN)/python -m pytest -m slow tests/studio/test_browser.py -s $(PYTEST_FLAGS)

test-mutants: $(STAMP) ## Plant known bugs in a copy of the package; check the tests catch each (slow: minutes)
	$(BIN)/python scripts/mutants.py

# The speech corpus of issue 41 (espeak-ng sentences a small model can learn to say on a CPU, with a held-out test
# set and a recogniser built from the training sentences only), then its two WER floors: the recordings, and the
# recordings through log-mel and Griffin-Lim, as a model's speech goes.
SPEAK_DIR ?= runs/speak_corpus
speak-corpus: $(STAMP) ## Make the speech corpus (3,000 + 100 held-out espeak-ng sentences, prepared for characters and for IPA, 2 min; installs espeak-ng when missing) and score its two WER floors
	@scripts/apt_install.sh $(ESPEAK) espeak-ng $(ESPEAK_LOG) fail speak-corpus
	$(BIN)/python scripts/make_speak_corpus.py --out $(SPEAK_DIR)
	$(BIN)/python scripts/make_speak_corpus.py --out $(SPEAK_DIR)_ipa --tokenizer ipa
	$(BIN)/f5lite-eval audio_dir=$(SPEAK_DIR)/test/audio testset=$(SPEAK_DIR)/test/testset.txt output=$(SPEAK_DIR)/floor \
		metrics=[wer] asr=pocketsphinx:$(SPEAK_DIR)/asr floor_vocoder=griffin_lim

# The clone corpus of issue 55 (many voices of Debian's speech engines, four held out of training in every form; see
# scripts/make_clone_corpus.py), then its floors: WER, speaker similarity and identification of the recordings and of
# the recordings through log-mel and Griffin-Lim, per voice.
CLONE_DIR ?= runs/clone_corpus
CLONE_PACKAGES := flite festival festvox-kallpc16k festvox-kdlpc16k espeak-ng
CLONE_LOG := build/clone-install.log
clone-corpus: $(STAMP) ## Make the clone corpus (21 training + 4 held-out voices, 2,200 clips, installs flite/festival/espeak-ng when missing) and score its floors
	@scripts/apt_install.sh /usr/bin/flite flite $(CLONE_LOG) fail clone-corpus
	@scripts/apt_install.sh /usr/bin/text2wave "festival festvox-kallpc16k festvox-kdlpc16k" $(CLONE_LOG) fail clone-corpus
	@scripts/apt_install.sh $(ESPEAK) espeak-ng $(ESPEAK_LOG) fail clone-corpus
	$(BIN)/python scripts/make_clone_corpus.py --out $(CLONE_DIR)
	$(BIN)/f5lite-eval audio_dir=$(CLONE_DIR)/test/audio testset=$(CLONE_DIR)/test/testset.txt output=$(CLONE_DIR)/floor \
		metrics=[wer,sim] voices=$(CLONE_DIR)/test/voices.txt asr=pocketsphinx:$(CLONE_DIR)/asr floor_vocoder=griffin_lim

SPEAK_MINUTES ?= 45
bench-speaks: $(STAMP) $(F5TTS_DIR)/.installed ## speak_cpu, speak_cpu_char and F5-TTS's trainer from scratch side by side for SPEAK_MINUTES (45) each, the cores shared out (one thread each on 2 cores); WER/SIM/MOS curves into scripts/results/ (needs make speak-corpus)
	PYTHONPATH=$(F5TTS_DIR) $(BIN)/python scripts/bench_speaks.py --minutes $(SPEAK_MINUTES) \
		--char-corpus $(SPEAK_DIR) --ipa-corpus $(SPEAK_DIR)_ipa --work runs/bench_speaks --out-dir scripts/results

# Issue 55's comparison: clone_cpu's model (speak_cpu's, tested equal) and F5-TTS's own trainer on the clone corpus,
# side by side for SPEAK_MINUTES each (one thread each), scored on the 60 held-out-voice rows with the cloning metrics.
# F5-TTS reads characters: a second copy of the corpus prepared for them (made once, 2 min).
bench-clone: $(STAMP) $(F5TTS_DIR)/.installed ## clone_cpu and F5-TTS's trainer from scratch on the clone corpus side by side for SPEAK_MINUTES (45) each; WER and cloning curves on the held-out voices into scripts/results/ (needs make clone-corpus)
	test -f $(CLONE_DIR)_char/test/testset.txt || $(BIN)/python scripts/make_clone_corpus.py --out $(CLONE_DIR)_char --tokenizer char
	PYTHONPATH=$(F5TTS_DIR) $(BIN)/python scripts/bench_speaks.py --minutes $(SPEAK_MINUTES) --arms f5lite f5tts \
		--char-corpus $(CLONE_DIR)_char --ipa-corpus $(CLONE_DIR) --set optim.max_updates=5000 --limit 60 \
		--work runs/bench_clone --out-dir scripts/results --tag clone_cpu

REWARD_MINUTES ?= 50
REWARD_START ?= runs/speak_cpu/export
bench-reward: $(STAMP) ## GRPO (+recipe=grpo) against plain fine-tuning of REWARD_START (a speak_cpu export) side by side for REWARD_MINUTES (50) each; held-out WER/SIM/MOS over 3 seeds into scripts/results/ (needs make speak-corpus)
	$(BIN)/python scripts/bench_speaks.py --start $(REWARD_START) --corpus $(SPEAK_DIR)_ipa --minutes $(REWARD_MINUTES) \
		--work runs/bench_reward --out-dir scripts/results

DEMO_DIR ?= runs/demo
DEMO_REF := f5lite/demo_data/audio/us_male/000_us_male.ogg
demo: $(STAMP) ## Train the demo recipe and a duration predictor on the shipped demo data (CPU, a few minutes), then synthesize with Griffin-Lim and score the held-out set
	$(BIN)/python -m f5lite.train +recipe=demo run_dir=$(DEMO_DIR)
	$(BIN)/python -m f5lite.train +recipe=duration_small run_dir=$(DEMO_DIR)_duration
	$(BIN)/f5lite-infer model=$(DEMO_DIR)/export ref_audio=$(DEMO_REF) duration=$(DEMO_DIR)_duration/export \
		ref_text="The kettle started to whistle just as the phone rang." \
		text="A small model trained on a laptop in a few minutes." \
		output=$(DEMO_DIR)/sample.wav sample.vocoder=griffin_lim sample.seed=0
	@echo "wrote $(DEMO_DIR)/sample.wav"
	$(BIN)/f5lite-eval model=$(DEMO_DIR)/export testset=f5lite/demo_data/val/testset.txt output=$(DEMO_DIR)/eval \
		duration=$(DEMO_DIR)_duration/export sample.vocoder=griffin_lim
	@echo "scored the held-out demo utterances: $(DEMO_DIR)/eval/summary.json, $(DEMO_DIR)/eval/report.html"

BENCH_OUT ?= scripts/results
BENCH_ROUNDS ?= 1
bench: $(STAMP) ## CPU-sized benchmarks, < 10 min on 2 cores: training ablation and sampling speed of the mid DiT
	$(BIN)/python scripts/bench_train.py --configs ablation --preset mid --threads 2 --steps 3 --warmup 1 \
		--rounds $(BENCH_ROUNDS) --out-dir $(BENCH_OUT)
	$(BIN)/python scripts/compare_f5tts_sampling.py --rtf --threads 2 --batches 1 --seconds 5 --rounds $(BENCH_ROUNDS) \
		--out-dir $(BENCH_OUT)

# The GPU comparisons with F5-TTS (beside, in .f5tts), sized for one device call of at most 9 minutes (a lease is 15
# minutes of device time, the machine's start included): the training step of F5-TTS v1 Base's architecture on a
# length-sorted bucket of speech-like lengths whose padded size is its 38,400 frames per GPU, compiled F5-TTS (the
# anchor) against f5lite compiled, + pack, + fp8, + pack + fp8, and activation checkpointing every 2nd block, with
# where each step's time goes; then whole runs of both trainers, both compiled. Each part has its own time limit
# and writes each result as soon as it has it, so a part cut short keeps what it measured. The sampling comparisons
# are bench-gpu-sampling. `make bench-gpu-rehearse` runs the same command lines on this CPU with the tiny model.
BENCH_GPU_DEVICE ?= cuda
BENCH_GPU_PRESET ?= base
BENCH_GPU_BATCH ?= bucket
BENCH_GPU_FRAMES ?= 38400
BENCH_GPU_STEPS ?= 6
BENCH_GPU_WARMUP ?= 2
BENCH_GPU_PROFILE ?= 12
BENCH_GPU_CONFIGS ?= F5-TTS bf16 + compile,f5lite bf16 + compile,f5lite bf16 + compile + pack,f5lite bf16 + compile + fp8,f5lite bf16 + compile + pack + fp8,f5lite bf16 + AC every 2nd
BENCH_GPU_RUN_MODEL ?= mid
BENCH_GPU_RUN_FRAMES ?= 38400
BENCH_GPU_RUN_MAX_SAMPLES ?= 64
BENCH_GPU_RUN_UPDATES ?= 15
BENCH_GPU_RUN_CKPT ?= 5
# Seconds each part may take: SIGINT to the script and its workers (each result so far is written), then a kill.
BENCH_GPU_STEP_S ?= 320
BENCH_GPU_RUN_S ?= 190
BENCH_GPU_ENV ?=
BENCH_PY ?= $(BIN)/python
BENCH_PYTHONPATH ?= $(F5TTS_DIR)
.PHONY: bench-gpu bench-gpu-commands bench-gpu-rehearse bench-gpu-device bench-gpu-script bench-gpu-sampling gpu-wheels
bench-gpu: $(STAMP) $(F5TTS_DIR)/.installed ## On a CUDA GPU, < 9 min: training step (dit_base; compiled F5-TTS vs f5lite compile, pack, fp8, AC; profiled) and whole runs against F5-TTS into scripts/results/
	$(MAKE) --no-print-directory bench-gpu-commands

# The commands alone (no install step): bench-gpu, bench-gpu-device and bench-gpu-rehearse run these. A part that
# fails or runs out of time does not stop the next (make says "ignored"); the results files say what was measured.
bench-gpu-commands:
	-PYTHONPATH=$(BENCH_PYTHONPATH) $(BENCH_GPU_ENV) timeout -s INT -k 20 $(BENCH_GPU_STEP_S) \
		$(BENCH_PY) scripts/bench_train.py --device $(BENCH_GPU_DEVICE) --preset $(BENCH_GPU_PRESET) \
		--lengths-from $(BENCH_GPU_BATCH) --frames $(BENCH_GPU_FRAMES) --configs "$(BENCH_GPU_CONFIGS)" \
		--steps $(BENCH_GPU_STEPS) --warmup $(BENCH_GPU_WARMUP) --rounds 1 --profile $(BENCH_GPU_PROFILE) --out-dir $(BENCH_OUT)
	-PYTHONPATH=$(BENCH_PYTHONPATH) $(BENCH_GPU_ENV) timeout -s INT -k 20 $(BENCH_GPU_RUN_S) \
		$(BENCH_PY) scripts/compare_f5tts_run.py --model $(BENCH_GPU_RUN_MODEL) --precision bf16 \
		--frames $(BENCH_GPU_RUN_FRAMES) --max-samples $(BENCH_GPU_RUN_MAX_SAMPLES) --updates $(BENCH_GPU_RUN_UPDATES) \
		--ckpt-every $(BENCH_GPU_RUN_CKPT) --workers 4 --rounds 1 --f5tts-compile --f5lite-extra perf.compile=true \
		--name f5tts_run_$(BENCH_GPU_DEVICE) --out-dir $(BENCH_OUT)

# The rehearsal of bench-gpu on this CPU: the same command lines with the tiny model, a 2,400-frame bucket, one step,
# whole runs of one batch per epoch (one shape: one compilation per side). The fp8 configurations are skipped in one
# line (CUDA only). Results go to build/bench-gpu-rehearsal; the inductor cache stays in build/ for the next time.
BENCH_REHEARSAL_OUT := build/bench-gpu-rehearsal
bench-gpu-rehearse: $(STAMP) $(F5TTS_DIR)/.installed ## Rehearse bench-gpu on this CPU with the tiny model (a few minutes; results in build/bench-gpu-rehearsal)
	$(MAKE) --no-print-directory bench-gpu-commands BENCH_GPU_DEVICE=cpu BENCH_GPU_PRESET=tiny BENCH_GPU_FRAMES=2400 \
		BENCH_GPU_STEPS=1 BENCH_GPU_WARMUP=2 BENCH_GPU_PROFILE=8 BENCH_GPU_RUN_MODEL=tiny BENCH_GPU_RUN_FRAMES=50000 \
		BENCH_GPU_RUN_MAX_SAMPLES=200 BENCH_GPU_RUN_UPDATES=2 BENCH_GPU_RUN_CKPT=1 BENCH_OUT=$(BENCH_REHEARSAL_OUT) \
		BENCH_GPU_STEP_S=600 BENCH_GPU_RUN_S=600 BENCH_GPU_ENV="TORCHINDUCTOR_CACHE_DIR=$(CURDIR)/build/inductor-rehearsal"

# The packages the lent GPU machine lacks (its image has torch, triton, accelerate, numpy, transformers, pyarrow ...),
# as Python 3.12 manylinux wheels in build/gpu-wheels (scripts/gpu_wheels.sh lists them), carried to the device.
GPU_WHEELS ?= build/gpu-wheels
GPU_SITE ?= /tmp/f5lite-gpu-site
gpu-wheels: ## Download/build the wheels the GPU machine lacks into build/gpu-wheels (carry it to the device)
	bash scripts/gpu_wheels.sh $(GPU_WHEELS)

# On the GPU machine (its python3, no .venv, nothing to fetch): the carried wheels into GPU_SITE, an empty stand-in
# for wandb (F5-TTS's trainer imports it at import time; neither benchmark logs to it) when it is missing, then
# bench-gpu's commands with f5lite from this checkout.
bench-gpu-device: ## On the lent GPU machine: install the carried build/gpu-wheels, then bench-gpu's commands with its python3
	python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target $(GPU_SITE) $(GPU_WHEELS)/*.whl
	PYTHONPATH=$(GPU_SITE) python3 -c "import wandb" 2> /dev/null || { mkdir -p $(GPU_SITE)/wandb && \
		echo '"""Stand-in: F5-TTS imports wandb; these benchmarks never log to it."""' > $(GPU_SITE)/wandb/__init__.py; }
	$(MAKE) --no-print-directory bench-gpu-commands BENCH_PY=python3 BENCH_PYTHONPATH='$$$$PWD:$(GPU_SITE)'

# The same as a shell script, for a machine without make: bench-gpu-device's commands (make -n), its results into $OUT
# when that is set (the device tool returns what is there), else scripts/results. It travels inside build/gpu-wheels.
bench-gpu-script: ## Write build/gpu-wheels/bench_gpu_device.sh: bench-gpu-device's commands for a machine without make
	mkdir -p $(GPU_WHEELS)
	{ echo '#!/usr/bin/env bash'; echo '# Written by make bench-gpu-script: make bench-gpu-device without make.'; \
		$(MAKE) -s -n --no-print-directory bench-gpu-device BENCH_OUT=__OUT__ | grep -v '^make ' \
		| sed 's|__OUT__|"$${OUT:-scripts/results}"|g'; } > $(GPU_WHEELS)/bench_gpu_device.sh
	bash -n $(GPU_WHEELS)/bench_gpu_device.sh

bench-gpu-sampling: $(STAMP) $(F5TTS_DIR)/.installed ## On a CUDA GPU: sampling against F5-TTS at its defaults and against a 4-step student
	PYTHONPATH=$(F5TTS_DIR) $(BIN)/python scripts/compare_f5tts_sampling.py --defaults --device $(BENCH_GPU_DEVICE) \
		--batches 1,8 --rounds 3 --reps 5 --out-dir $(BENCH_OUT)
	PYTHONPATH=$(F5TTS_DIR) $(BIN)/python scripts/compare_f5tts_sampling.py --fewstep --device $(BENCH_GPU_DEVICE) \
		--batches 1,8 --rounds 3 --reps 5 --out-dir $(BENCH_OUT)

# The documentation site (mkdocs.yml, docs/): the docs extra goes into .venv once, like $(STAMP).
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -c constraints.txt -e '.[docs]' 2>&1 | { grep -v "$(PIP_NOISE)" || true; }
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP) ## Build the documentation site with warnings as errors
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: $(STAMP) ## Check formatting and lint rules with ruff
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

fmt: $(STAMP) ## Format and auto-fix with ruff
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: $(STAMP) ## Type-check f5lite/ with mypy
	$(BIN)/mypy

wheel-check: $(STAMP) ## Build the wheel, install it in a temporary venv, compose +recipe=debug_tiny from /tmp
	bash scripts/wheel_check.sh $(BIN)/python

clean: ## Remove caches and build outputs (keeps .venv)
	rm -rf build dist site .pytest_cache .mypy_cache .ruff_cache $(F5TTS_DIR)
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -print | xargs rm -rf
