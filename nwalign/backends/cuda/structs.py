"""NumPy mirrors of every CUDA kernel's argument struct, in one place (``align=True`` lays fields out as a
C compiler does; pointers are uint64). ``SOURCES`` names the struct each mirrors and the kernel source
that defines it: tests/backends/test_cuda_compile.py compiles those definitions on the host and checks every
field's offset and the struct's size against these dtypes."""

import numpy as np

_P = np.uint64  # a device pointer

SETS = np.dtype([("qseqs", _P), ("qoffsets", _P), ("tseqs", _P), ("toffsets", _P)])  # allpairs.cu
ADIAG_ARGS = np.dtype([("q", _P), ("t", _P), ("S", _P), ("A", np.int32), ("m", np.int32), ("n", np.int32),
                       ("go", np.int32), ("ge", np.int32), ("mode", np.int32), ("H", _P), ("E", _P), ("F", _P),
                       ("dirs", _P), ("store", np.int32), ("adm_off", _P), ("adm_base", np.int64),
                       ("corner", _P), ("best", _P), ("pos_keys", np.int32)], align=True)
TILE_ARGS = np.dtype([("q", _P), ("t", _P), ("S", _P), ("A", np.int32), ("m", np.int32), ("n", np.int32),
                      ("go", np.int32), ("ge", np.int32), ("mode", np.int32), ("rowH", _P), ("rowF", _P),
                      ("colH", _P), ("colE", _P), ("cornerLeft", _P), ("dirs", _P), ("store", np.int32),
                      ("corner", _P), ("best", _P), ("pos_keys", np.int32)], align=True)
WAVE_ARGS = np.dtype([("q", _P), ("t", _P), ("S", _P), ("A", np.int32), ("m", np.int32), ("n", np.int32),
                      ("go", np.int32), ("ge", np.int32), ("r0", np.int32), ("r1", np.int32), ("ncols", np.int32),
                      ("topH", _P), ("topF", _P), ("ringH", _P), ("ringF", _P), ("progress", _P),
                      ("ring_slots", np.int32), ("nbands", np.int32), ("dirs", _P), ("ckH", _P), ("ckF", _P),
                      ("ck_every", np.int32), ("corner", _P), ("band_best", _P), ("track", np.int32)], align=True)
SCORE_ARGS = np.dtype([("q", _P), ("t", _P), ("S", _P), ("A", np.int32), ("m", np.int32), ("n", np.int32),
                       ("go", np.int32), ("ge", np.int32), ("r0", np.int32), ("r1", np.int32), ("ncols", np.int32),
                       ("nbands", np.int32), ("row", _P), ("ckH", _P), ("ckF", _P), ("ck_every", np.int32),
                       ("corner", _P), ("band_best", _P), ("dirs", _P), ("ld", np.int32)], align=True)
SCORE16_ARGS = np.dtype([("a", SCORE_ARGS), ("limit16", np.int32), ("overflow", _P)], align=True)
SPREAD16_ARGS = np.dtype([("s", SCORE16_ARGS), ("next_row", _P), ("gpu", np.int32), ("gpus", np.int32),
                          ("chunk", np.int32), ("local_bands", np.int32)], align=True)
SW_ARGS = np.dtype([("res", _P), ("off", _P), ("list", _P), ("first", np.int32), ("count", np.int32), ("qrow", _P),
                    ("m", np.int32), ("steps", np.int32), ("table", _P), ("table_words", np.int32), ("pad", np.int32),
                    ("go", np.int32), ("ge", np.int32), ("bound", _P), ("scores", _P), ("next", _P)], align=True)
SP_ARGS = np.dtype([("res", _P), ("off", _P), ("first", np.int32), ("count", np.int32), ("profile", _P),
                    ("A1", np.int32), ("pad", np.int32), ("go", np.int32), ("ge", np.int32), ("read_bound", np.int32),
                    ("write_bound", np.int32), ("bound", _P), ("scores", _P), ("next", _P), ("row0", np.int32)],
                   align=True)
BATCH_JOB = np.dtype([("q", np.int64), ("t", np.int64), ("dirs", np.int64), ("row", np.int64), ("ops", np.int64),
                      ("m", np.int32), ("n", np.int32)], align=True)
BATCH_ARGS = np.dtype([("jobs", _P), ("njobs", np.int32), ("q", _P), ("t", _P), ("S", _P), ("A", np.int32),
                       ("go", np.int32), ("ge", np.int32), ("rows", _P), ("dirs", _P), ("ops", _P), ("out", _P)],
                      align=True)
BAND_JOB = np.dtype([("q", np.int64), ("t", np.int64), ("dirs", np.int64), ("row", np.int64), ("ops", np.int64),
                     ("m", np.int32), ("n", np.int32), ("lo", np.int32), ("hi", np.int32), ("W", np.int32)],
                    align=True)
BAND_ARGS = np.dtype([("jobs", _P), ("njobs", np.int32), ("q", _P), ("t", _P), ("S", _P), ("A", np.int32),
                      ("go", np.int32), ("ge", np.int32), ("rows", _P), ("dirs", _P), ("ops", _P), ("out", _P)],
                     align=True)

#: dtype -> (C struct name, kernels/ file that defines it)
SOURCES = {
    "SETS": ("Sets", "allpairs.cu"), "ADIAG_ARGS": ("AdiagArgs", "antidiagonal.cu"),
    "TILE_ARGS": ("TileArgs", "tiles.cuh"), "WAVE_ARGS": ("WaveArgs", "wavefront.cu"),
    "SCORE_ARGS": ("ScoreArgs", "wave_common.cuh"), "SCORE16_ARGS": ("Score16Args", "wave_score16.cu"),
    "SPREAD16_ARGS": ("Spread16Args", "wave_score16.cu"),
    "SW_ARGS": ("SwArgs", "sw_search.cu"),
    "SP_ARGS": ("SpArgs", "sw_profile.cu"), "BATCH_JOB": ("BatchJob", "batch_align.cu"),
    "BATCH_ARGS": ("BatchArgs", "batch_align.cu"), "BAND_JOB": ("BandJob", "banded_align.cu"),
    "BAND_ARGS": ("BandArgs", "banded_align.cu"),
}
