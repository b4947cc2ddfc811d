"""The Connect Four board as a PNG: a picture that reads the same on every Discord theme.

Why a picture and not an emoji grid: Discord draws emoji as Twemoji, whose
circles are flat colours, and none of the usable pairs is visible on both
themes (🔴 is 2.7:1 on the dark theme's background, 🟡 1.4:1 on the light one,
⚫ 1.1:1 on dark). A picture brings its own background: the board's frame
(:data:`FRAME`) stands out from both themes, and the holes and stones are drawn
against the frame, not against the theme. :data:`CONTRASTS` lists the pairs that
must reach :data:`MIN_CONTRAST`; the tests compute them from these colours.

The picture: a blue frame of holes, red and yellow stones with a dark rim, the
column numbers under their columns (the move buttons carry the same numbers),
a dot on the stone dropped last, and each winning four joined by a thick
line with a ring on each of its stones (a drop can make two at once). Pure:
a position in, PNG bytes out.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from functools import cache

from PIL import Image, ImageDraw, ImageFont

from engine.connect4 import Connect4

RGB = tuple[int, int, int]

#: Discord's backgrounds: the embed and the message list, dark and light themes.
THEMES: dict[str, RGB] = {
    "dark embed": (0x2B, 0x2D, 0x31),
    "dark background": (0x31, 0x33, 0x38),
    "light embed": (0xF2, 0xF3, 0xF5),
    "light background": (0xFF, 0xFF, 0xFF),
}
FRAME: RGB = (0x33, 0x84, 0xCC)  # the board: ≥ 3:1 against all four theme colours
HOLE: RGB = (0xF5, 0xF7, 0xFA)
STONES: tuple[RGB, RGB] = ((0xE0, 0x24, 0x3B), (0xFF, 0xD2, 0x1F))  # first player red
RIM: RGB = (0x14, 0x16, 0x1A)  # a stone's edge, the last-move dot and the winning line
LABEL: RGB = (0xFF, 0xFF, 0xFF)  # the column numbers, on the frame

#: WCAG's minimum for graphical objects.
MIN_CONTRAST = 3.0

#: Every pair of colours that must be told apart, with what it is for.
CONTRASTS: dict[str, tuple[RGB, RGB]] = {
    **{f"frame on the {name}": (FRAME, bg) for name, bg in THEMES.items()},
    "hole in the frame": (HOLE, FRAME),
    "stone rim in the frame": (RIM, FRAME),
    "stone rim next to a hole": (RIM, HOLE),
    "red stone inside its rim": (STONES[0], RIM),
    "yellow stone inside its rim": (STONES[1], RIM),
    "marks on a red stone": (RIM, STONES[0]),
    "marks on a yellow stone": (RIM, STONES[1]),
    "column numbers on the frame": (LABEL, FRAME),
}

CELL = 64  # pixels per cell: sharp when Discord scales the picture down on a phone
MARGIN = 10
LABEL_BAND = 40


def _channel(c: int) -> float:
    v = c / 255
    return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4


def luminance(color: RGB) -> float:
    """WCAG relative luminance of an sRGB colour."""
    r, g, b = (_channel(c) for c in color)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: RGB, b: RGB) -> float:
    """WCAG contrast ratio of two colours, from 1 (same) to 21 (black on white)."""
    la, lb = sorted((luminance(a), luminance(b)))
    return (lb + 0.05) / (la + 0.05)


def winning_lines(position: Connect4) -> list[list[tuple[int, int]]]:
    """The fours in a row through the last stone: each its cells (column, row) in order;
    empty if none.

    A drop can make a line of five or more (all of it is one line), and lines in
    several directions at once (every one of them is returned).
    """
    if not position.moves:
        return []
    column = position.moves[-1]
    row = position.column_height(column) - 1
    who = position.cell(column, row)
    lines = []
    for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
        line = [(column, row)]
        for sign in (1, -1):
            c, r = column + sign * dc, row + sign * dr
            while 0 <= c < position.width and 0 <= r < position.height:
                if position.cell(c, r) != who:
                    break
                line.append((c, r))
                c, r = c + sign * dc, r + sign * dr
        if len(line) >= 4:
            lines.append(sorted(line))
    return lines


def last_cell(position: Connect4) -> tuple[int, int] | None:
    if not position.moves:
        return None
    column = position.moves[-1]
    return column, position.column_height(column) - 1


@cache
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def size(position: Connect4) -> tuple[int, int]:
    """Width and height in pixels of the picture of ``position``."""
    return 2 * MARGIN + position.width * CELL, 2 * MARGIN + position.height * CELL + LABEL_BAND


def centre(position: Connect4, column: int, row: int) -> tuple[int, int]:
    """The pixel at the centre of a cell (row 0 at the bottom)."""
    x = MARGIN + column * CELL + CELL // 2
    y = MARGIN + (position.height - 1 - row) * CELL + CELL // 2
    return x, y


def board_png(position: Connect4) -> bytes:
    """The board as PNG bytes (see the module docstring)."""
    width, height = size(position)
    image = Image.new("RGB", (width, height), FRAME)
    draw = ImageDraw.Draw(image)
    radius = CELL * 40 // 100
    rim = max(2, CELL // 20)
    for column in range(position.width):
        for row in range(position.height):
            x, y = centre(position, column, row)
            box = (x - radius, y - radius, x + radius, y + radius)
            owner = position.cell(column, row)
            if owner is None:
                draw.ellipse(box, fill=HOLE)
            else:
                draw.ellipse(box, fill=STONES[owner], outline=RIM, width=rim)
    lines = winning_lines(position)
    for line in lines:
        _mark_line(draw, position, line, radius)
    if not lines and (last := last_cell(position)) is not None:
        x, y = centre(position, *last)
        dot = CELL // 9
        draw.ellipse((x - dot, y - dot, x + dot, y + dot), fill=RIM)
    font = _font(LABEL_BAND * 7 // 10)
    label_y = MARGIN + position.height * CELL + LABEL_BAND // 2
    for column in range(position.width):
        x = MARGIN + column * CELL + CELL // 2
        draw.text((x, label_y), str(column + 1), fill=LABEL, font=font, anchor="mm")
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _mark_line(
    draw: ImageDraw.ImageDraw,
    position: Connect4,
    line: Sequence[tuple[int, int]],
    radius: int,
) -> None:
    """A ring inside each stone of the line and a thick stroke joining their centres."""
    ring = radius * 6 // 10
    for cell in line:
        x, y = centre(position, *cell)
        draw.ellipse((x - ring, y - ring, x + ring, y + ring), outline=RIM, width=CELL // 14)
    (x0, y0), (x1, y1) = centre(position, *line[0]), centre(position, *line[-1])
    stroke = CELL // 8
    draw.line((x0, y0, x1, y1), fill=RIM, width=stroke)
    for x, y in ((x0, y0), (x1, y1)):
        draw.ellipse((x - stroke, y - stroke, x + stroke, y + stroke), fill=RIM)
