"""Headless Chromium for the report tests: where it is, and the PNG it writes decoded to
pixels (no imaging library), so a screenshot can be checked for what was drawn."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """An 8-bit RGB/RGBA PNG (what Chromium writes) decoded to rows of RGB pixels."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(b"".join(idat)), width * bpp
    prev, rows = bytearray(stride), []
    for y in range(height):
        start = y * (stride + 1)
        line = _unfilter(raw[start], bytearray(raw[start + 1 : start + 1 + stride]), prev, bpp)
        rows.append(b"".join(bytes(line[i : i + 3]) for i in range(0, stride, bpp)))
        prev = line
    return width, height, rows


def _unfilter(kind: int, line: bytearray, prev: bytearray, bpp: int) -> bytearray:
    for i in range(len(line)) if kind else ():
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
        if kind == 1:
            line[i] = (line[i] + a) & 255
        elif kind == 2:
            line[i] = (line[i] + b) & 255
        elif kind == 3:
            line[i] = (line[i] + ((a + b) >> 1)) & 255
        else:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    return line


def screenshot_colours(page: Path, directory: Path) -> set[bytes]:
    """The RGB colours of a 1200x900 headless-Chromium screenshot of `page`."""
    assert CHROMIUM is not None
    shot = directory / "shot.png"
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={directory / 'chromium-profile'}",
        f"--screenshot={shot}", "--window-size=1200,900", page.as_uri(),
    ]  # fmt: skip
    subprocess.run(command, capture_output=True, timeout=120, check=True)
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 900)
    return {row[i : i + 3] for row in rows for i in range(0, len(row), 3)}
