"""Colour maps for the heatmaps: 0 (missed) and > 1 (collision) never look alike."""
from __future__ import annotations

import numpy as np

from kernels import ATOMIC_COLOUR, REPEAT_COLOUR

#: a cell of the margin around C where writes outside C landed
OUTSIDE_COLOUR = "#c51b8a"

from ..models.map_images import (
    DIFF_COLOURS,
    MANY_COLOURS,
    MISSING_COLOUR,
    ONCE_COLOUR,
    PALETTE,
    WARP,
    WARP_HUES,
    WARP_PALETTE,
    Colouring,
    MapImage,
)
from ..qt import QtGui, pg


def _rgb(colour: str) -> tuple[int, int, int]:
    c = QtGui.QColor(colour)
    return (c.red(), c.green(), c.blue())


def _stepped(bins: list[tuple[float, float, tuple, tuple]]) -> pg.ColorMap:
    """A colour map from (start, stop, colour at start, colour at stop) bins."""
    pos, colours = [], []
    for start, stop, first, last in bins:
        pos += [start, stop]
        colours += [first, last]
    return pg.ColorMap(pos=np.array(pos), color=np.array(colours, dtype=np.ubyte))


def colour_map(colouring: Colouring) -> pg.ColorMap:
    """The pyqtgraph colour map for ``colouring`` over ``MapImage.levels``."""
    black = _rgb(MISSING_COLOUR)
    outside = _rgb(OUTSIDE_COLOUR)
    if colouring.kind == "count":
        # Over the levels of maps.count_scale (-3.5 to 3): -3 updated
        # atomically by several threads, -2 a write outside C landed there,
        # -1 stored again by one thread, 0 never written, 1 once, 1.5..3 more
        # than once by several threads (log scale from 2 to the top).  The
        # same bands whatever the run: one colour bar.
        green = _rgb(ONCE_COLOUR)
        unit = 1 / 6.5
        low, mid, high = (_rgb(c) for c in MANY_COLOURS)
        blue, lavender = _rgb(REPEAT_COLOUR), _rgb(ATOMIC_COLOUR)
        middle = 5 * unit + (1 - 5 * unit) / 2
        return _stepped([(0.0, unit, lavender, lavender), (unit, 2 * unit, outside, outside),
                         (2 * unit, 3 * unit, blue, blue),
                         (3 * unit, 4 * unit, black, black),
                         (4 * unit, 5 * unit, green, green),
                         (5 * unit, middle, low, mid), (middle, 1.0, mid, high)])
    if colouring.kind == "categorical":
        n = len(PALETTE) + 2
        bins = [(0.0, 1 / n, outside, outside), (1 / n, 2 / n, black, black)]
        for i, colour in enumerate(PALETTE, start=2):
            rgb = _rgb(colour)
            bins.append((i / n, (i + 1) / n, rgb, rgb))
        return _stepped(bins)
    if colouring.kind == "warp-lane":
        # -2 outside C, -1 (never written) black, then per warp hue a ramp
        # from light (lane 0) to dark (lane 31), over (-2.5, top + 0.5).
        span = colouring.top + 3
        bins = [(0.0, 1 / span, outside, outside), (1 / span, 2 / span, black, black)]
        for hue in range(WARP_HUES):
            colour = QtGui.QColor(WARP_PALETTE[hue])
            light, dark = colour.lighter(150), colour.darker(170)
            start = (2 + hue * WARP) / span
            bins.append((start, start + WARP / span, _rgb(light.name()), _rgb(dark.name())))
        return _stepped(bins)
    if colouring.kind == "diff":
        n = len(DIFF_COLOURS)
        return _stepped([(i / n, (i + 1) / n, _rgb(c), _rgb(c)) for i, c in enumerate(DIFF_COLOURS)])
    if colouring.kind == "zero":
        bins_total = max(colouring.top, 1) + 1
        unit = 1.0 / bins_total
        gradient = pg.colormap.get("viridis")
        start, end = gradient.map(np.array([0.15, 1.0]), mode="byte")[:, :3]
        return _stepped([(0.0, unit, black, black),
                         (unit, 1.0, tuple(int(x) for x in start), tuple(int(x) for x in end))])
    return pg.colormap.get("viridis")


#: entries of the lookup tables the maps are drawn with.  pyqtgraph's
#: default, 256, is fewer than the 1,026 values of a warp-lane writer map
#: (32 warps x 32 lanes, and "never written"): warp 1's first lanes were
#: drawn in warp 0's colour.  Four entries a value keep each value's own.
LOOKUP_ENTRIES = 4096


def lookup_table(colouring: Colouring) -> np.ndarray:
    """The RGBA table a map of ``colouring`` is drawn with, spread over its levels."""
    table = colour_map(colouring).getLookupTable(nPts=LOOKUP_ENTRIES, alpha=True)
    return np.ascontiguousarray(table, dtype=np.uint8)


def image_rgba(image: MapImage) -> np.ndarray:
    """The image as RGBA bytes, exactly as pyqtgraph draws it with
    :func:`lookup_table`: values scaled over the levels and truncated into
    the table; NaN (nothing to show) transparent.  Made off the GUI thread for
    large maps (map_painter.py), so it must be fast: ~0.2 s for 4096 x 4096."""
    lo, hi = image.levels
    table32 = lookup_table(image.colouring).view(np.uint32).ravel()
    span = (hi - lo) or 1.0
    data = image.data
    # In pyqtgraph's own arithmetic (functions.rescaleData): float32 where the
    # data fits it, in place with Python scalars; else a value on a bin's
    # edge can fall into the neighbouring entry.
    work = np.float32 if np.can_cast(data.dtype, np.float32) else np.float64
    scaled = data.astype(work)
    scaled -= float(lo)
    scaled *= float(LOOKUP_ENTRIES / span)
    missing = np.isnan(scaled) if data.dtype.kind == "f" else None
    if missing is not None:
        scaled[missing] = 0
    np.clip(scaled, 0, LOOKUP_ENTRIES - 1, out=scaled)
    rgba = table32[scaled.astype(np.uint16)].view(np.uint8).reshape(*data.shape, 4)
    if missing is not None:
        rgba[missing] = 0
    return rgba
