"""Small PNG images of a count map, without Qt, for reports (``threadmap
check``): every element one pixel or a few, 0 black, 1 green, more than once
orange to dark red, blue where one thread stored it again and lavender where
several threads updated it atomically.  The app draws the same colours (its count colouring
takes them from here)."""
from __future__ import annotations

import struct
import zlib

import numpy as np

#: never written, written once, and written more than once (low, middle, high)
MISSING_COLOUR = "#000000"
ONCE_COLOUR = "#1a9850"
MANY_COLOURS = ("#fdae61", "#d73027", "#67001f")
#: An element stored more than once, every time by the same thread (``C[i, j]
#: +=`` in a loop): correct, and never drawn as a collision.
REPEAT_COLOUR = "#4575b4"
#: An element updated by several threads, every update atomic (a histogram's
#: bins): no collision, atomics lose no update (``AccessMaps.atomic_mask``).
ATOMIC_COLOUR = "#9e9ac8"


def _rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)], np.uint8)


def count_rgb(count: np.ndarray, one_writer: np.ndarray | None = None,
              atomic: np.ndarray | None = None) -> np.ndarray:
    """RGB bytes of a write-count map (stores and atomic updates): 0, 1 and
    more than once apart, the last on a log scale from 2 to the maximum;
    where ``one_writer`` (the elements written more than once, all by one
    thread), :data:`REPEAT_COLOUR`; where ``atomic`` (updated by several
    threads, all atomically), :data:`ATOMIC_COLOUR`."""
    rgb = np.empty(count.shape + (3,), np.uint8)
    rgb[count <= 0] = _rgb(MISSING_COLOUR)
    rgb[count == 1] = _rgb(ONCE_COLOUR)
    many = count > 1
    if many.any():
        top = max(int(count.max()), 3)
        place = np.log(count[many].astype(np.float64) / 2) / np.log(top / 2)  # 0 .. 1
        low, mid, high = (_rgb(c).astype(np.float64) for c in MANY_COLOURS)
        first = place[:, None] < 0.5
        t = np.where(first, place[:, None] * 2, place[:, None] * 2 - 1)
        rgb[many] = np.where(first, low + (mid - low) * t, mid + (high - mid) * t).astype(np.uint8)
    if one_writer is not None:
        rgb[one_writer & many] = _rgb(REPEAT_COLOUR)
    if atomic is not None:
        rgb[atomic & many] = _rgb(ATOMIC_COLOUR)
    return rgb


def png(pixels: np.ndarray, level: int = 6) -> bytes:
    """``pixels`` (rows x columns x 3 or 4 bytes: RGB or RGBA) as a PNG file's
    bytes, deflated at zlib ``level``.  (Also the app's heatmap exports: Qt's
    own PNG writer took 24 ms for an 800 x 600 figure, this 2-3 ms at level 3,
    in a smaller file; a sweep writes 64 of them.)"""
    rows, cols, channels = pixels.shape
    if channels not in (3, 4) or pixels.dtype != np.uint8:
        raise ValueError(f"PNG pixels are RGB or RGBA bytes, not {channels} x {pixels.dtype}")
    # Each row starts with its filter type (0: none).
    raw = np.empty((rows, 1 + cols * channels), np.uint8)
    raw[:, 0] = 0
    raw[:, 1:].reshape(rows, cols, channels)[...] = pixels  # (a view: each row is contiguous)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    colour_type = 2 if channels == 3 else 6
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", cols, rows, 8, colour_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw.tobytes(), level)) + chunk(b"IEND", b""))


def count_thumbnail(count: np.ndarray, size: int = 96,
                    one_writer: np.ndarray | None = None,
                    atomic: np.ndarray | None = None) -> bytes:
    """A PNG of ``count`` about ``size`` pixels on its longer side: small maps
    are enlarged by whole pixels; large ones keep, in each pixel, the block's
    most telling value (0 if any element there was missed, else the most
    writes, drawn as one thread's repeated stores only where every element
    written more than once there was: ``one_writer``; as atomic updates only
    where every one was updated atomically by several threads: ``atomic``)."""
    rows, cols = count.shape
    step = max(1, -(-max(rows, cols) // size))
    if step > 1:
        pad_r, pad_c = -rows % step, -cols % step

        def blocks_of(array, fill):
            padded = np.pad(array, ((0, pad_r), (0, pad_c)), constant_values=fill)
            return padded.reshape(padded.shape[0] // step, step, padded.shape[1] // step, step)

        blocks = blocks_of(count, 1)
        if one_writer is not None:
            one_writer = blocks_of(one_writer | (count <= 1), True).all(axis=(1, 3))
        if atomic is not None:
            atomic = blocks_of(atomic | (count <= 1), True).all(axis=(1, 3))
        most = blocks.max(axis=(1, 3))
        count = np.where(blocks.min(axis=(1, 3)) == 0, 0, most)
    rgb = count_rgb(count, one_writer, atomic)
    scale = max(1, size // max(count.shape))
    if scale > 1:
        rgb = rgb.repeat(scale, axis=0).repeat(scale, axis=1)
    return png(rgb)
