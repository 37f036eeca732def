import gzip

from bench.core.cache import Cache
from bench.core.io import atomic_write_json, csv_gz_bytes, read_csv_gz


def _write(folder):
    (folder / "labels.csv.gz").write_bytes(csv_gz_bytes(("id", "q"), [("a", 0.25), ("b", 0.75)]))
    (folder / "model").mkdir()
    (folder / "model" / "weights.bin").write_bytes(b"\x00" * 64)


def test_cache_round_trip_and_key_stability(tmp_path):
    cache = Cache(tmp_path)
    key = cache.key({"source": "x", "seed": 0})
    assert key == Cache(tmp_path / "other").key({"seed": 0, "source": "x"})
    assert cache.load("teacher", key) is None
    folder = cache.store("teacher", key, {"source": "x"}, _write)
    assert cache.load("teacher", key) == folder
    assert read_csv_gz(folder / "labels.csv.gz") == [{"id": "a", "q": "0.25"}, {"id": "b", "q": "0.75"}]


def test_damaged_cache_entries_are_rebuilt_not_used(tmp_path, capsys):
    cache = Cache(tmp_path)
    for damage in ("truncate", "delete", "manifest"):
        key = cache.key({"damage": damage})
        folder = cache.store("teacher", key, {}, _write)
        if damage == "truncate":
            (folder / "labels.csv.gz").write_bytes(b"\x1f\x8b")
        elif damage == "delete":
            (folder / "model" / "weights.bin").unlink()
        else:
            (folder / "manifest.json").write_text("{not json")
        assert cache.load("teacher", key) is None
        assert not folder.exists()
        assert "invalid" in capsys.readouterr().err


def test_failed_write_leaves_no_entry(tmp_path):
    cache = Cache(tmp_path)
    key = cache.key({"x": 1})

    def explode(folder):
        _write(folder)
        raise RuntimeError("killed mid-write")

    try:
        cache.store("teacher", key, {}, explode)
    except RuntimeError:
        pass
    assert cache.load("teacher", key) is None
    assert not list((tmp_path / "teacher").iterdir())


def test_csv_gz_is_deterministic(tmp_path):
    rows = [("p1", 0.1), ("p2", -2.5)]
    assert csv_gz_bytes(("id", "r"), rows) == csv_gz_bytes(("id", "r"), rows)
    path = tmp_path / "x.csv.gz"
    path.write_bytes(csv_gz_bytes(("id", "r"), rows))
    assert gzip.decompress(path.read_bytes()).decode() == "id,r\np1,0.1\np2,-2.5\n"
    atomic_write_json(tmp_path / "a" / "b.json", {"k": 1})
    assert (tmp_path / "a" / "b.json").read_text().strip().startswith("{")


def test_store_keeps_a_valid_entry_another_writer_stored_first(tmp_path, capsys):
    """Two runs that both missed the cache both store: the second keeps the first's entry (a reader may be
    using it, and it holds the same numbers) instead of deleting it under that reader."""
    cache = Cache(tmp_path)
    first = cache.store("teacher", "k", {}, _write)
    inode = (first / "labels.csv.gz").stat().st_ino
    assert cache.store("teacher", "k", {}, _write) == first
    assert (first / "labels.csv.gz").stat().st_ino == inode
    assert [p.name for p in (tmp_path / "teacher").iterdir()] == ["k"]   # the second's staging folder is gone
    assert "invalid" not in capsys.readouterr().err


def test_required_files_are_checked_whatever_the_manifest_lists(tmp_path, capsys):
    cache = Cache(tmp_path)
    folder = cache.store("teacher", "k", {}, _write, required=("labels.csv.gz", "model/*.bin"))
    assert cache.load("teacher", "k", required=("labels.csv.gz", "model/*.bin")) == folder
    assert cache.load("teacher", "k", required=("info.json",)) is None
    assert "[cache] teacher/k is invalid (manifest does not list info.json); rebuilding it" in capsys.readouterr().err
    try:
        cache.store("teacher", "k", {}, _write, required=("info.json",))
    except RuntimeError as error:   # a stage that does not write what it needs: a bug, caught at the store
        assert str(error) == "cache entry teacher/k was written without info.json"
    else:
        raise AssertionError("stored an entry without a required file")
    assert not (tmp_path / "teacher" / "k").exists()
