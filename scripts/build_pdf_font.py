"""Build the font PDF exports embed: exports/running/writers/pdf/fonts/NotoSansSC-Exports.ttf.

The source is Noto Sans CJK SC Regular from Debian's fonts-noto-cjk (installed with apt-get when
missing; SIL Open Font License 1.1, which allows bundling and modified versions). Its 65,535
glyphs take 16 MiB, too much for every worker package, so this keeps the characters a table of
Chinese, Russian, Greek or Western data uses: Latin (with the extended blocks), Greek, Cyrillic,
punctuation, currency and number signs, CJK punctuation, kana, full-width forms and the 6,763
hanzi of GB 2312, the whole CJK Unified Ideographs block (rarer hanzi, kanji and hanja) and
Hangul (Korean). A character outside the set is still in the file's text (it extracts and
searches) and is drawn as the font's empty box.

CFF outlines become TrueType ones (fontTools' cu2qu, at most 1 unit of 1,000 off): a PDF embeds
a TrueType font as a CIDFontType2 whose glyphs are addressed by glyph id, which the writer's own
subset (per file, of the glyphs it used) needs. Run: ``python scripts/build_pdf_font.py``.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from fontTools import merge, subset
from fontTools.pens.cu2quPen import Cu2QuPen
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fontTools.ttLib import TTCollection, TTFont, newTable
from fontTools.ttLib.scaleUpem import scale_upem

SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
COPYRIGHT = Path("/usr/share/doc/fonts-noto-cjk/copyright")
# Latin, Greek and Cyrillic come from Noto Sans (fonts-noto-core, OFL too): the CJK font lacks
# many of their accented letters (Greek with tonos, for one).
LATIN = Path("/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf")
FACE = "Noto Sans CJK SC"
OUT_DIR = Path(__file__).resolve().parent.parent / "exports" / "running" / "writers" / "pdf" / "fonts"
OUT = OUT_DIR / "NotoSansSC-Exports.ttf"
# A Modified Version under the OFL: its own name (the original's stays in the copyright notice).
FAMILY = "Exports Sans SC"
# Blocks kept whole: Latin, Greek, Cyrillic, punctuation and symbols, CJK punctuation, kana,
# Hangul (jamo, compatibility jamo and every syllable: Korean text), the CJK Unified
# Ideographs (every hanzi, kanji and hanja of the block, the rarer ones of names included),
# full-width forms.
BLOCKS = [
    (0x1100, 0x11FF),
    (0x3130, 0x318F),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3),
    (0xF900, 0xFAFF),
    (0x20000, 0x2FA1F),
    (0x0020, 0x024F),
    (0x0370, 0x03FF),
    (0x0400, 0x052F),
    (0x1E00, 0x1EFF),
    (0x2000, 0x206F),
    (0x20A0, 0x20CF),
    (0x2100, 0x218F),
    (0x2190, 0x21FF),
    (0x2200, 0x22FF),
    (0x2460, 0x24FF),
    (0x2500, 0x257F),
    (0x25A0, 0x25FF),
    (0x3000, 0x30FF),
    (0xFF00, 0xFFEF),
]
# Emoji and pictographs the two Noto fonts lack come from Symbola (Debian's fonts-symbola: "free
# for any use; they may be opened, edited, modified, regenerated, packaged and redistributed"),
# black and white: a PDF table is printed, and its text font draws no colour glyphs.
SYMBOLS = Path("/usr/share/fonts/truetype/ancient-scripts/Symbola_hint.ttf")
SYMBOLS_COPYRIGHT = Path("/usr/share/doc/fonts-symbola/copyright")
SYMBOL_BLOCKS = [
    (0x2190, 0x21FF),
    (0x2300, 0x23FF),
    (0x2600, 0x27BF),
    (0x2B00, 0x2BFF),
    (0x1F000, 0x1FAFF),
]
# Outline error allowed when cubic curves become quadratic, in font units (1,000 an em).
MAX_ERROR = 1.0


def gb2312() -> set[int]:
    """Every character of GB 2312 (rows 0xA1-0xF7, cells 0xA1-0xFE)."""
    characters = set()
    for row in range(0xA1, 0xF8):
        for cell in range(0xA1, 0xFF):
            try:
                characters.add(ord(bytes([row, cell]).decode("gb2312")))
            except UnicodeDecodeError:
                continue
    return characters


def source_font() -> TTFont:
    if not SOURCE.exists() or not LATIN.exists() or not SYMBOLS.exists():
        subprocess.run(["apt-get", "install", "-y", "fonts-noto-cjk", "fonts-noto-core", "fonts-symbola"], check=True)
    for font in TTCollection(str(SOURCE)).fonts:
        if font["name"].getDebugName(4) == FACE:
            return font
    raise SystemExit(f"{FACE} is not in {SOURCE}")


def cut(font: TTFont, characters: set[int]) -> None:
    options = subset.Options()
    options.layout_features = []
    options.hinting = False
    options.desubroutinize = True
    options.notdef_outline = True
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6, 13, 14]
    options.drop_tables += ["VORG", "vhea", "vmtx", "GSUB", "GPOS", "GDEF", "BASE", "DSIG"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=characters)
    subsetter.subset(font)


def to_truetype(font: TTFont) -> None:
    """CFF outlines to glyf (the steps of fontTools' otf2ttf snippet)."""
    order = font.getGlyphOrder()
    glyph_set = font.getGlyphSet()
    glyphs = {}
    for name in order:
        pen = TTGlyphPen(glyph_set)
        glyph_set[name].draw(Cu2QuPen(pen, MAX_ERROR, reverse_direction=True))
        glyphs[name] = pen.glyph()
    font["loca"] = newTable("loca")
    glyf = font["glyf"] = newTable("glyf")
    glyf.glyphOrder = order
    glyf.glyphs = glyphs
    del font["CFF "]
    glyf.compile(font)
    hmtx = font["hmtx"]
    for name, glyph in glyphs.items():
        if hasattr(glyph, "xMin"):
            hmtx[name] = (hmtx[name][0], glyph.xMin)
    maxp = font["maxp"] = newTable("maxp")
    maxp.tableVersion = 0x00010000
    for field in (
        "maxZones",
        "maxTwilightPoints",
        "maxStorage",
        "maxFunctionDefs",
        "maxInstructionDefs",
        "maxStackElements",
        "maxSizeOfInstructions",
        "maxComponentElements",
    ):
        setattr(maxp, field, 1 if field == "maxZones" else 0)
    post = font["post"]
    post.formatType = 3.0
    font.sfntVersion = "\x00\x01\x00\x00"


def rename(font: TTFont) -> None:
    name = font["name"]
    postscript = FAMILY.replace(" ", "")
    for record in list(name.names):
        if record.nameID in (1, 4, 16):
            record.string = FAMILY
        elif record.nameID == 3:
            record.string = f"{postscript}-Regular;subset of {FACE}"
        elif record.nameID == 6:
            record.string = f"{postscript}-Regular"


def licence(notices: list[str]) -> str:
    """The OFL text of the Debian copyright file, with the fonts' own notices above it."""
    text = COPYRIGHT.read_text()
    body = text.split("License: SIL-1.1\n", 2)[2].split("\nLicense: ")[0]
    lines = [line[1:] if line.startswith(" ") else line for line in body.splitlines()]
    lines = ["" if line == "." else line for line in lines]
    notice = (
        f"{FAMILY}: Noto Sans (Latin, Greek, Cyrillic) merged with a subset of {FACE}, converted\n"
        "to TrueType outlines, by scripts/build_pdf_font.py. The original fonts' notices:\n\n"
        + "\n".join(notices)
        + "\nNoto Sans CJK: with Reserved Font Name 'Source'. Noto is a trademark of Google LLC.\n"
        + "\nThis Font Software is licensed under the SIL Open Font License, Version 1.1.\n\n"
    )
    symbols = SYMBOLS_COPYRIGHT.read_text().split("Copyright:\n", 1)[1].split("\nThe Debian packaging", 1)[0]
    symbols_notice = (
        "\n\nThe emoji and pictographs the Noto fonts lack are a subset of Symbola (Debian's\n"
        "fonts-symbola), scaled to 1,000 units an em. Its copyright and licence:\n\n"
        + "\n".join(line.strip() for line in symbols.strip().splitlines())
        + "\n"
    )
    return notice + "\n".join(lines).strip() + symbols_notice


def main() -> None:
    blocks: set[int] = set()
    for start, end in BLOCKS:
        blocks.update(range(start, end + 1))
    cjk = source_font()
    latin = TTFont(str(LATIN))
    notices = [str(font["name"].getDebugName(0)) for font in (latin, cjk)]
    latin_characters = blocks & set(latin.getBestCmap())
    cut(latin, latin_characters)
    cjk_characters = ((gb2312() | blocks) - latin_characters) & set(cjk.getBestCmap())
    cut(cjk, cjk_characters)
    to_truetype(cjk)
    symbols = TTFont(str(SYMBOLS))
    wanted = {code for start, end in SYMBOL_BLOCKS for code in range(start, end + 1)}
    # Only what the Noto fonts lack, at their 1,000 units an em (fontTools merges fonts of one size).
    cut(symbols, (wanted & set(symbols.getBestCmap())) - latin_characters - cjk_characters)
    scale_upem(symbols, 1000)
    with tempfile.TemporaryDirectory() as folder:
        parts = [str(Path(folder) / name) for name in ("latin.ttf", "cjk.ttf", "symbols.ttf")]
        for part, source in zip(parts, (latin, cjk, symbols), strict=True):
            source.save(part)
        font = merge.Merger(merge.Options(drop_tables=["vhea", "vmtx"])).merge(parts)
    rename(font)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    font.save(str(OUT))
    (OUT_DIR / "OFL.txt").write_text(licence(notices))
    kept = len(TTFont(str(OUT)).getBestCmap())
    print(f"{OUT}: {OUT.stat().st_size:,} bytes, {kept:,} characters")


if __name__ == "__main__":
    main()
