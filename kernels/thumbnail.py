"""Small PNG images of a count map, without Qt, for reports (``threadmap
check``): every element one pixel or a few, 0 black, 1 green, more than once
orange to dark red.  The app draws the same colours (its count colouring
takes them from here)."""
from __future__ import annotations

import struct
import zlib

import numpy as np

#: never written, written once, and written more than once (low, middle, high)
MISSING_COLOUR = "#000000"
ONCE_COLOUR = "#1a9850"
MANY_COLOURS = ("#fdae61", "#d73027", "#67001f")


def _rgb(colour: str) -> np.ndarray:
    return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)], np.uint8)


def count_rgb(count: np.ndarray) -> np.ndarray:
    """RGB bytes of a write-count map: 0, 1 and more than once apart, the
    last on a log scale from 2 to the maximum."""
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
    return rgb


def png(rgb: np.ndarray) -> bytes:
    """``rgb`` (rows x columns x 3 bytes) as a PNG file's bytes."""
    rows, cols, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[r].tobytes() for r in range(rows))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", cols, rows, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def count_thumbnail(count: np.ndarray, size: int = 96) -> bytes:
    """A PNG of ``count`` about ``size`` pixels on its longer side: small maps
    are enlarged by whole pixels; large ones keep, in each pixel, the block's
    most telling value (0 if any element there was missed, else the most writes)."""
    rows, cols = count.shape
    step = max(1, -(-max(rows, cols) // size))
    if step > 1:
        pad_r, pad_c = -rows % step, -cols % step
        padded = np.pad(count, ((0, pad_r), (0, pad_c)), constant_values=1)
        blocks = padded.reshape(padded.shape[0] // step, step, padded.shape[1] // step, step)
        most = blocks.max(axis=(1, 3))
        count = np.where(blocks.min(axis=(1, 3)) == 0, 0, most)
    rgb = count_rgb(count)
    scale = max(1, size // max(count.shape))
    if scale > 1:
        rgb = rgb.repeat(scale, axis=0).repeat(scale, axis=1)
    return png(rgb)
