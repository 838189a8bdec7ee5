#!/usr/bin/env bash
# The Python packages the lent GPU machine lacks, as wheels for its Python 3.12 on x86-64 Linux, into one folder that
# the device tool carries (`make gpu-wheels`; `make bench-gpu-device` installs them there with --no-index --no-deps).
#
#     bash scripts/gpu_wheels.sh [OUT]     # OUT defaults to build/gpu-wheels (git-ignored via build/)
#
# The machine's image already has torch 2.11, triton, accelerate, numpy, scipy, pandas, pyarrow, huggingface-hub,
# einops, safetensors, pyyaml, tqdm, numba, scikit-learn, torchdiffeq, psutil ... (the device notes' package list);
# nothing there can be fetched. The list below is what `make bench-gpu` imports beyond that (found by tracing the
# imports of both benchmarks' processes), at the versions of the dev environment. Left out on purpose: wandb (F5-TTS's
# trainer imports it at import time; bench-gpu-device puts an empty stand-in there instead of its 20+ MB), and the
# optional imports that fail quietly (pytz for pandas, the HTTP/2 stack of a newer huggingface-hub).
# Binary packages come as manylinux wheels for CPython 3.12 (`pip download --only-binary=:all:`); the two that PyPI
# has only as source (antlr4-python3-runtime 4.9.3, encodec 0.1.1; both pure Python) are built here with `pip wheel`.
set -euo pipefail

out="${1:-build/gpu-wheels}"
python="${PYTHON:-python3}"
mkdir -p "$out"

# f5lite's own imports (its config, data, audio and fp8 paths) and F5-TTS's with their missing dependencies.
binary=(
    # f5lite: configuration, data (lhotse), audio, vocoder, FP8 training
    hydra-core==1.3.8 omegaconf==2.3.1
    lhotse==1.33.0 intervaltree==3.2.1 cytoolz==1.2.0 dill==0.4.1
    soundfile==0.14.0 cffi==2.1.1 pycparser==3.0 soxr==1.1.0 audioread==3.1.0
    vocos==0.1.0
    torchao==0.18.0
    # F5-TTS 1.1.22 and what it imports
    f5-tts==1.1.22 x-transformers==2.31.10 ema-pytorch==0.8.3 loguru==0.7.3 einx==0.4.3 frozendict==2.5.1
    orjson==3.13.0 torch-einops-utils==0.2.0 rjieba==0.2.2 pypinyin==0.55.0
    librosa==0.11.0 pooch==1.9.0 platformdirs==4.14.8 decorator==5.3.1
    datasets==5.2.0 multiprocess==0.70.19
)
source_only=(antlr4-python3-runtime==4.9.3 encodec==0.1.1)

platforms=()
for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
    manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$tag")
done
"$python" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$out" "${binary[@]}"
# Pure-Python sources: a py3-none-any wheel built here installs on any Python 3.
"$python" -m pip wheel --quiet --no-deps -w "$out" "${source_only[@]}"

count=$(find "$out" -name '*.whl' | wc -l)
expected=$((${#binary[@]} + ${#source_only[@]}))
if [ "$count" -ne "$expected" ]; then
    echo "gpu_wheels.sh: $count wheels in $out, expected $expected (one version of each: remove stale ones)" >&2
    exit 1
fi
echo "gpu_wheels.sh: $count wheels, $(du -sh "$out" | cut -f1) in $out"
