#!/usr/bin/env python3
"""Writes the small PNG images the tests and examples use, into tests/data/images/.

Pure Python 3 (zlib and struct only: nothing to install). Every pixel is a fixed function of
its coordinates (specks come from a fixed linear congruential generator), so running the
script again gives the same pixels; the compressed bytes may differ with another zlib.

    python3 tests/data/make-images.py

- shapes.png         64 x 64 grey, 8-bit: a dim gradient, a bright square, a disc, a diagonal
                     line and dark and bright specks (Sobel, morphology, pooling, tone map).
- colour.png         64 x 64 RGBA, 8-bit: colour bars over a checkerboard, alpha falling to the
                     right (the separable blur).
- rgb.png            8 x 8 RGB, 8-bit (an RGBA buffer reads it with alpha 255).
- grey-alpha.png     8 x 8 grey with alpha, 8-bit.
- grey16.png         8 x 8 grey, 16-bit: sample 257 * (8 y + x) (reads as 8 y + x into ints).
- palette.png        8 x 8 palette image of four colours.
"""

import os
import struct
import zlib

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "images")

GREY, RGB, PALETTE, GREY_ALPHA, RGBA = 0, 2, 3, 4, 6


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def write_png(name, width, height, colour, rows, depth=8, palette=None):
    """rows: one bytes object per row, already packed at `depth` (big-endian for 16 bits)."""
    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    raw = b"".join(b"\x00" + row for row in rows)  # filter type 0 (none) on every row
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
    if palette is not None:
        data += chunk(b"PLTE", b"".join(bytes(c) for c in palette))
    data += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def shapes():
    size = 64
    state = 12345
    specks = {}
    for _ in range(40):
        state = (1103515245 * state + 12345) % (1 << 31)
        y, x = (state >> 8) % size, (state >> 16) % size
        specks[(y, x)] = 0 if len(specks) % 2 == 0 else 255
    rows = []
    for y in range(size):
        row = bytearray()
        for x in range(size):
            v = 20 + (x + y) // 4  # a dim gradient
            if 8 <= x < 28 and 10 <= y < 30:
                v = 200  # a square
            if (x - 44) ** 2 + (y - 40) ** 2 <= 12 ** 2:
                v = 150  # a disc
            if abs(x - (63 - y)) <= 1 and y < 20:
                v = 255  # a diagonal line
            v = specks.get((y, x), v)
            row.append(v)
        rows.append(bytes(row))
    write_png("shapes.png", size, size, GREY, rows)


def colour():
    size = 64
    bars = [(230, 40, 40), (40, 200, 60), (50, 80, 230), (240, 220, 30)]
    rows = []
    for y in range(size):
        row = bytearray()
        for x in range(size):
            r, g, b = bars[x // 16]
            if ((x // 8) + (y // 8)) % 2 == 0:
                r, g, b = r // 2, g // 2, b // 2
            a = 255 - 3 * x
            row += bytes((r, g, b, a))
        rows.append(bytes(row))
    write_png("colour.png", size, size, RGBA, rows)


def small():
    n = 8
    write_png("rgb.png", n, n, RGB, [bytes(v for x in range(n) for v in (8 * y + x, 100 + x, 200 - y)) for y in range(n)])
    write_png("grey-alpha.png", n, n, GREY_ALPHA, [bytes(v for x in range(n) for v in (8 * y + x, 255 - 8 * x)) for y in range(n)])
    write_png("grey16.png", n, n, GREY, [b"".join(struct.pack(">H", 257 * (8 * y + x)) for x in range(n)) for y in range(n)], depth=16)
    palette = [(0, 0, 0), (255, 0, 0), (0, 255, 0), (0, 0, 255)]
    write_png("palette.png", n, n, PALETTE, [bytes((x + y) % 4 for x in range(n)) for y in range(n)], palette=palette)


if __name__ == "__main__":
    os.makedirs(HERE, exist_ok=True)
    shapes()
    colour()
    small()
