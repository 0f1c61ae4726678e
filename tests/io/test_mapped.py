"""Reading memory-mapped arrays through their files (nwalign.io.mapped)."""

import os
import zlib

import numpy as np
import pytest

from nwalign.io.mapped import RangeReader, copy_of, each_block, file_span


@pytest.fixture
def mapped(tmp_path):
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, size=3 * (1 << 20) + 12345, dtype=np.uint8)
    path = tmp_path / "blob"
    path.write_bytes(b"x" * 4099 + data.tobytes())  # an offset that is no page multiple
    return data, np.memmap(path, dtype=np.uint8, mode="r", offset=4099, shape=(data.size,)), str(path)


def test_the_file_span_of_a_memory_map_and_its_views(mapped):
    data, mm, path = mapped
    assert file_span(mm) == (path, 4099)
    assert file_span(mm[1000:2000]) == (path, 4099 + 1000)
    assert file_span(np.asarray(mm)[5:]) == (path, 4099 + 5)  # a plain ndarray over the map
    assert file_span(data) is None
    assert file_span(mm[::2]) is None  # not contiguous


@pytest.mark.parametrize("lo,hi", [(0, 10), (4095, 70000), (1 << 20, 3 * (1 << 20) + 12345)])
def test_ranges_read_from_the_file_equal_the_arrays(mapped, lo, hi):
    data, mm, _ = mapped
    out = np.zeros(hi - lo + 7, dtype=np.uint8)
    with RangeReader(mm) as reader:
        assert np.array_equal(reader.read(lo, hi, out), data[lo:hi])
    with RangeReader(mm[lo:]) as reader:  # a slice's own coordinates
        assert np.array_equal(reader.read(0, hi - lo, out), data[lo:hi])
    with RangeReader(data) as reader:  # no file: copied
        assert np.array_equal(reader.read(lo, hi, out), data[lo:hi])
    assert np.array_equal(copy_of(mm, lo, hi), data[lo:hi])


@pytest.mark.parametrize("threads", [1, 3])
def test_each_block_covers_the_array_in_order(mapped, threads):
    data, mm, _ = mapped
    sizes = each_block(mm, lambda piece: (int(piece.size), int(piece.max()), zlib.crc32(piece)), threads, block=1 << 20)
    assert [s for s, _, _ in sizes] == [1 << 20] * 3 + [12345]
    assert max(m for _, m, _ in sizes) == int(data.max())
    assert [c for _, _, c in sizes] == [zlib.crc32(data[a:a + (1 << 20)]) for a in range(0, data.size, 1 << 20)]


def test_a_short_file_is_an_error_not_a_short_read(mapped, tmp_path):
    data, mm, path = mapped
    with RangeReader(mm) as reader:
        os.truncate(path, 4099 + 100)
        with pytest.raises(OSError, match="ended"):
            reader.read(0, 1000, np.empty(1000, dtype=np.uint8))


def _rss_file_kb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssFile:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux's /proc: resident set sizes")
def test_a_pass_through_the_file_leaves_the_pages_out_of_the_resident_set(tmp_path):
    path = tmp_path / "big"
    path.write_bytes(np.arange(48 << 20, dtype=np.uint64).astype(np.uint8).tobytes())
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    before = _rss_file_kb()
    assert max(each_block(mm, lambda piece: int(piece.max()))) == 255
    through_file = _rss_file_kb() - before
    assert int(np.asarray(mm).max()) == 255  # touching the map: its pages join the resident set
    through_map = _rss_file_kb() - before - through_file
    assert through_file < 8 << 10 and through_map > 32 << 10, (through_file, through_map)


def test_recoded_arrays_are_translated_wherever_read(mapped):
    from nwalign.io.mapped import Recoded, window

    data, mm, _ = mapped
    table = np.arange(256, dtype=np.uint8)[::-1].copy()
    for base in (mm, data):  # from the file, and from memory
        rec = Recoded(base, table)
        assert rec.size == len(rec) == data.size and rec.shape == (data.size,) and rec.dtype == np.uint8
        assert np.array_equal(np.asarray(rec), table[data])
        assert np.array_equal(copy_of(rec, 70000, 1 << 21), table[data[70000:1 << 21]])
        assert np.array_equal(rec[5:900], table[data[5:900]]) and int(rec[7]) == int(table[data[7]])
        part = window(rec, 1000, 3 << 20)
        assert isinstance(part, Recoded) and np.array_equal(copy_of(part), table[data[1000:3 << 20]])
        assert [int(p.max()) for p in each_block(rec, lambda p: p.copy(), block=1 << 20)] == \
            [int(table[data[a:a + (1 << 20)]].max()) for a in range(0, data.size, 1 << 20)]
    assert window(data, 3, 9) is not None and np.array_equal(window(data, 3, 9), data[3:9])


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux's /proc: resident set sizes")
def test_a_databases_hits_are_read_through_its_file(tmp_path, monkeypatch):
    """A search reads each hit's residues and names; through the mapping, each touch made the page
    cache's folios around it part of the resident set (50 MB a query of UniRef50's). Small sections are
    read through the map (their share of the resident set is bounded): here none is small."""
    from nwalign.io import mapped
    from nwalign.io.database import load_database
    from nwalign.io.makedb import makedb

    monkeypatch.setattr(mapped, "PIECES_THROUGH_MAP", 0)
    rng = np.random.default_rng(5)
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)
    seqs = [letters[rng.integers(0, 20, size=int(n))].tobytes().decode() for n in rng.integers(50, 400, 20000)]
    (tmp_path / "db.fa").write_text("".join(f">p{k} protein {k}\n{s}\n" for k, s in enumerate(seqs)))
    makedb(str(tmp_path / "db.fa"), str(tmp_path / "db.nwdb"))
    db = load_database(str(tmp_path / "db.nwdb"))
    hits = rng.choice(len(seqs), size=400, replace=False)
    assert db.record(0).seq == seqs[0]  # the names' index checked (its ends), once
    before = _rss_file_kb()
    for k in hits:
        record = db.record(int(k))
        assert (record.id, record.description, record.seq) == (f"p{k}", f"p{k} protein {k}", seqs[k])
        assert db.codes_of(int(k)).size == len(seqs[k])
    through_file = _rss_file_kb() - before
    for k in hits:  # the same residues through the map: a page at least each
        assert np.asarray(db.codes[db.offsets[k]:db.offsets[k + 1]]).max() < 20
    through_map = _rss_file_kb() - before - through_file
    assert through_file < 256 and through_map > 1024, (through_file, through_map)


def test_a_pickled_reader_carries_no_file_descriptor(mapped):
    """A descriptor means nothing in another process: a pickled reader is made again from its array."""
    import pickle

    data, mm, _ = mapped
    with RangeReader(mm) as reader:
        copy = pickle.loads(pickle.dumps(reader))
        assert copy.fd != reader.fd
        assert np.array_equal(copy.read(10, 5000, np.empty(4990, dtype=np.uint8)), data[10:5000])
        copy.close()
