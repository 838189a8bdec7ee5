#!/usr/bin/env bash
# Build the wheel, install it into a throw-away venv, and compose +recipe=debug_tiny from /tmp with it.
# Proves that configs, recipes and the demo dataset ship inside the wheel and are found without a checkout.
# Usage: scripts/wheel_check.sh PYTHON   (PYTHON: the dev venv's interpreter, which supplies the dependencies)
set -euo pipefail
py=${1:?usage: wheel_check.sh PYTHON}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

quietly() { "$@" >"$work/log" 2>&1 || { cat "$work/log"; return 1; }; }

quietly "$py" -m pip wheel --no-deps -w "$work/dist" "$repo"
wheel=$(ls "$work"/dist/f5lite-*.whl)
echo "built $(basename "$wheel")"

# The shipped config tree must hold YAML only, and every recipe and group file.
"$py" - "$wheel" "$repo" <<'PY'
import gzip, json, sys, zipfile, pathlib
wheel, repo = sys.argv[1], pathlib.Path(sys.argv[2])
names = set(zipfile.ZipFile(wheel).namelist())
conf = sorted(n for n in names if n.startswith("f5lite/_conf/"))
bad = [n for n in conf if not n.endswith(".yaml")]
assert not bad, f"non-YAML files shipped in _conf: {bad}"
for folder in ("configs", "recipes"):
    for path in (repo / folder).rglob("*.yaml"):
        shipped = f"f5lite/_conf/{folder}/{path.relative_to(repo / folder).as_posix()}"
        assert shipped in names, f"{shipped} missing from the wheel"
print(f"wheel ships {len(conf)} config files")
# The demo dataset ships as package data: its cuts and every audio file they name.
cuts = gzip.decompress(zipfile.ZipFile(wheel).read("f5lite/demo_data/cuts.jsonl.gz")).decode()
audio = [json.loads(line)["recording"]["sources"][0]["source"] for line in cuts.splitlines()]
missing = [a for a in audio if f"f5lite/demo_data/{a}" not in names]
assert audio and not missing, f"demo audio missing from the wheel: {missing[:3]}"
print(f"wheel ships the demo dataset ({len(audio)} utterances)")
# And its held-out split, which make demo scores with f5lite-eval.
val = gzip.decompress(zipfile.ZipFile(wheel).read("f5lite/demo_data/val/cuts.jsonl.gz")).decode().splitlines()
assert val and "f5lite/demo_data/val/testset.txt" in names, "the demo's validation split is missing from the wheel"
print(f"wheel ships the demo's validation split ({len(val)} utterances)")
PY

# A fresh venv that borrows the dev venv's installed dependencies (torch is 5 GB; reinstalling it proves nothing
# about f5lite) but not f5lite itself: the dev venv's editable hook is not loaded through a path entry.
# --without-pip: the new venv's own bundled setuptools would shadow the newer one torch requires.
"$py" -m venv --without-pip "$work/venv"
dev_site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
new_site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$dev_site" > "$new_site/_f5lite_wheel_check_deps.pth"
quietly "$py" -m pip --python "$work/venv/bin/python" install --no-index "$wheel"

cd /tmp
"$work/venv/bin/python" - "$work/venv" <<'PY'
import sys, pathlib
import f5lite
from f5lite.paths import config_roots
venv = pathlib.Path(sys.argv[1]).resolve()
where = pathlib.Path(f5lite.__file__).resolve()
assert venv in where.parents, f"f5lite imported from {where}, not from the wheel in {venv}"
configs, recipes = config_roots()
assert "_conf" in configs.parts and venv in configs.parents, f"configs found at {configs}, not in the wheel"
print(f"f5lite {f5lite.__version__} from {where.parent}")
PY
out=$("$work/venv/bin/python" -m f5lite.config +recipe=debug_tiny)
grep -q "^run_name: debug_tiny$" <<<"$out"
grep -q "^  dim: 64$" <<<"$out"
# debug_tiny's data.dir is the demo dataset inside the installed wheel.
demo=$(sed -n 's/^  dir: //p' <<<"$out")
[[ "$demo" == "$work/venv/"* && -f "$demo/cuts.jsonl.gz" ]] || { echo "data.dir=$demo is not the wheel's demo"; exit 1; }
echo "wheel-check: composed +recipe=debug_tiny from /tmp with the installed wheel: OK"
