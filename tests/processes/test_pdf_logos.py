"""PDF logos and footers per type and per tenant (issue 49, section 2): a PNG or JPEG declared
next to the declaration, checked at start-up (refused with the reason when it cannot be used),
drawn at the head of every page as the file's own pixels; a tenant's logo and footer over the
type's. Read back with poppler (pdfimages, pdftotext), which the project does not write with."""

from __future__ import annotations

import io
import subprocess
import tempfile
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from exports.core.aws.clients import ClientFactory
from exports.core.export_type import AnyExportType, Column, ColumnKind, TenantBranding
from exports.core.logos import LOGO_MAX_BYTES, ImageRefused, read_image
from exports.core.task import ExportFormat
from exports.export_types.build import build_export_types
from exports.export_types.loader import DeclarationError, load_declarations
from exports.running.export_run import run_export
from exports.running.formats.pdf import heading
from exports.running.progress import ProgressReporter
from exports.running.writers.pdf import write_pdf_stream
from exports.sources.kind import SourceReaders
from tests.pdf_images import chunk, jpeg, listed_images, pdf_text, png
from tests.unit.export_fakes import NumbersExport, make_world, running_task

COLUMNS = [Column("n", "N", ColumnKind.INTEGER), Column("text", "Text", ColumnKind.STRING)]
DECLARATION = """
[sources.billing]
kind = "postgresql"
url_env = "BILLING_URL"

[types.invoices]
description = "Invoices"
source = "billing"
query = "SELECT 1 AS n"
locale = "de"
pdf_footer = { de = "Beispiel GmbH · vertraulich", en = "Example Ltd · confidential" }
pdf_logo = "logos/type.png"

[tenants.branding.acme]
pdf_logo = "logos/acme.jpg"
pdf_footer = "Acme Corp · for internal use"

[tenants.branding.globex]
pdf_footer = { en = "Globex · confidential", ja = "グローベックス · 社外秘" }
"""


def declared_type(folder: Path, declaration: str = DECLARATION) -> AnyExportType:
    """The file's one type, built as the functions build it (no connection opened)."""
    path = folder / "exports.toml"
    path.write_text(declaration, encoding="utf-8")
    readers = SourceReaders(client=ClientFactory(), environ={"BILLING_URL": "postgresql://127.0.0.1:1/x"})
    (built,) = build_export_types(load_declarations(path), readers).types
    return built


@pytest.fixture
def logos(tmp_path: Path) -> Path:
    (tmp_path / "logos").mkdir()
    (tmp_path / "logos" / "type.png").write_bytes(png(120, 40, 6))
    (tmp_path / "logos" / "acme.jpg").write_bytes(jpeg())
    return tmp_path


def pdf_for(export_type: AnyExportType, tenant: str | None, locale: str | None = None, rows: int = 3) -> bytes:
    """A PDF of ``rows`` rows as the worker writes it for ``tenant``: the heading (title, footer,
    logo) from the type."""
    from datetime import UTC, datetime

    shown = heading(
        "Invoices", {}, datetime(2026, 12, 6, tzinfo=UTC), locale=locale, look=export_type.pdf_look(tenant, locale)
    )
    out = io.BytesIO()
    write_pdf_stream(COLUMNS, [(n, f"row {n}") for n in range(rows)], out, shown)
    return out.getvalue()


# Per type and per tenant, as poppler reads the file


def test_two_tenants_get_their_own_footer_and_logo_and_others_the_types(logos: Path) -> None:
    invoices = declared_type(logos)

    acme, globex, other = pdf_for(invoices, "acme"), pdf_for(invoices, "globex", "ja"), pdf_for(invoices, "initech")

    acme_images = listed_images(acme)
    assert [(image.type, image.encoding, image.color) for image in acme_images] == [("image", "jpeg", "rgb")]
    assert "Acme Corp · for internal use" in pdf_text(acme)
    assert "Beispiel GmbH" not in pdf_text(acme)

    # Globex declares a footer only: the type's logo (RGBA: an image and its soft mask).
    globex_images = listed_images(globex)
    assert [(image.type, image.width, image.height) for image in globex_images] == [
        ("image", 120, 40),
        ("smask", 120, 40),
    ]
    assert "グローベックス · 社外秘" in pdf_text(globex)

    assert "Beispiel GmbH · vertraulich" in pdf_text(other)
    assert [image.type for image in listed_images(other)] == ["image", "smask"]


def test_a_tenants_footer_table_without_the_locale_falls_back_to_its_first_text(logos: Path) -> None:
    invoices = declared_type(logos)

    assert invoices.pdf_look("globex", "fr").footer == "Globex · confidential"
    assert invoices.pdf_look("acme", "ja").footer == "Acme Corp · for internal use"
    assert invoices.pdf_look(None, "en").footer == "Example Ltd · confidential"


def test_the_logo_is_drawn_at_the_head_of_every_page_above_the_table(logos: Path) -> None:
    invoices = declared_type(logos)

    body = pdf_for(invoices, "acme", rows=200)

    pages = pdf_text(body).split("\f")[:-1]
    assert len(pages) >= 3
    assert [image.page for image in listed_images(body)] == list(range(1, len(pages) + 1))
    assert all("Acme Corp · for internal use" in page for page in pages)


def test_the_worker_draws_the_tasks_tenants_logo_and_footer() -> None:
    class Branded(NumbersExport):
        tenant_branding = MappingProxyType(
            {"acme": TenantBranding({"en": "Acme · confidential"}, read_image(png(60, 20, 2)))}
        )

    world = make_world(Branded(rows_total=3, page_rows=2), upload_part_bytes=5 * 2**20)
    bodies = {}
    for tenant in ("acme", "globex"):
        task = running_task(world, fmt=ExportFormat.PDF, tenant=tenant)
        result = run_export(task, ProgressReporter(task, world.deps), world.deps)
        bodies[tenant] = world.files.objects[result.key]["body"]

    assert "Acme · confidential" in pdf_text(bodies["acme"])
    assert [(image.width, image.height) for image in listed_images(bodies["acme"])] == [(60, 20)]
    assert "Acme" not in pdf_text(bodies["globex"])
    assert listed_images(bodies["globex"]) == []


# The pixels are the file's


def unfiltered(rows: bytes, width: int, channels: int) -> list[bytes]:
    """PNG's rows unfiltered (a reference decoder for the test, the spec's algorithm)."""
    stride = width * channels
    previous, out = bytes(stride), []
    for start in range(0, len(rows), stride + 1):
        kind, line = rows[start], bytearray(rows[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) % 256
            elif kind == 2:
                line[i] = (line[i] + up) % 256
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) % 256
            elif kind == 4:
                estimate = left + up - corner
                near = min(
                    (abs(estimate - left), 0, left), (abs(estimate - up), 1, up), (abs(estimate - corner), 2, corner)
                )
                line[i] = (line[i] + near[2]) % 256
        previous = bytes(line)
        out.append(previous)
    return out


@pytest.mark.parametrize(("colour", "channels"), [(6, 4), (4, 2)])
def test_a_png_with_alpha_is_drawn_with_its_own_colours_and_alpha(colour: int, channels: int) -> None:
    import zlib

    data = png(23, 9, colour, seed=11)
    idat = data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8]
    pixels = b"".join(unfiltered(zlib.decompress(idat), 23, channels))
    out = io.BytesIO()
    write_pdf_stream(COLUMNS, [(1, "a")], out, heading_with(read_image(data)))

    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "f.pdf"
        source.write_bytes(out.getvalue())
        subprocess.run(["pdfimages", str(source), f"{folder}/i"], check=True, capture_output=True)
        colour_file, alpha_file = sorted(Path(folder).glob("i-*"))
        shades = netpbm_pixels(colour_file.read_bytes(), grey=channels == 2)
        alpha = netpbm_pixels(alpha_file.read_bytes(), grey=True)

    step = channels
    expected_colours = b"".join(pixels[i : i + step - 1] for i in range(0, len(pixels), step))
    assert shades == expected_colours
    assert alpha == pixels[step - 1 :: step]


def heading_with(logo: Any) -> Any:
    from datetime import UTC, datetime

    from exports.core.export_type import PdfLook

    return heading("T", {}, datetime(2026, 12, 6, tzinfo=UTC), look=PdfLook("", logo))


def netpbm_pixels(data: bytes, grey: bool = False) -> bytes:
    """The samples of a binary PPM or PGM (8-bit); with ``grey``, one per pixel (pdfimages may
    write a soft mask as a PPM of equal channels)."""
    magic, width, height, maximum = data.split(maxsplit=4)[:4]
    assert magic in (b"P5", b"P6") and maximum == b"255"
    size = int(width) * int(height) * (3 if magic == b"P6" else 1)
    samples = data[-size:]
    if grey and magic == b"P6":
        assert samples[0::3] == samples[1::3] == samples[2::3]
        return samples[0::3]
    return samples


# Refused at start-up, with the reason


def broken_crc() -> bytes:
    data = bytearray(png(10, 10))
    data[-20] ^= 0xFF  # inside the IDAT chunk's body or CRC
    return bytes(data)


def palette_with_alpha() -> bytes:
    extra = chunk(b"PLTE", bytes(range(6))) + chunk(b"tRNS", b"\x00")
    return png(4, 4, 3, extra=extra)


def cmyk_jpeg() -> bytes:
    data = bytearray(jpeg())
    frame = data.index(b"\xff\xc0")
    data[frame + 9] = 4  # the frame header's component count
    return bytes(data)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"GIF89a" + bytes(40), "is neither a PNG nor a JPEG image"),
        (png(10, 10)[:-12], "ends before its IEND chunk"),
        (png(10, 10)[:-30], "a chunk runs past the end of the file"),
        (broken_crc(), "fails its CRC"),
        (png(10, 10, interlace=1), "interlaced PNG"),
        (png(5000, 1, 0), "5000 x 1 pixels"),
        (palette_with_alpha(), "palette PNG with transparency"),
        (jpeg()[:-2], "end-of-image marker"),
        (cmyk_jpeg(), "4 colour components"),
        (b"\x89PNG\r\n\x1a\n" + bytes(LOGO_MAX_BYTES), f"a logo may have {LOGO_MAX_BYTES:,} at most"),
    ],
    ids=lambda value: value if isinstance(value, str) else "image",
)
def test_an_unusable_image_is_refused_with_the_reason(data: bytes, reason: str) -> None:
    with pytest.raises(ImageRefused, match=reason):
        read_image(data)


def test_a_bad_logo_stops_start_up_naming_the_key_and_the_reason(logos: Path) -> None:
    (logos / "logos" / "type.png").write_bytes(png(10, 10, interlace=1))
    with pytest.raises(DeclarationError, match=r"types\.invoices: pdf_logo: logos/type\.png is an interlaced PNG"):
        declared_type(logos)

    (logos / "logos" / "type.png").write_bytes(png(10, 10))
    (logos / "logos" / "acme.jpg").unlink()
    with pytest.raises(
        DeclarationError, match=r"tenants\.branding\.acme\.pdf_logo: 'logos/acme\.jpg' must name a file"
    ):
        declared_type(logos)


def test_a_logo_outside_the_declarations_folder_is_refused(logos: Path) -> None:
    inside = logos / "inside"
    inside.mkdir()
    declaration = DECLARATION.replace('"logos/type.png"', '"../logos/type.png"').replace(
        'pdf_logo = "logos/acme.jpg"\n', ""
    )
    with pytest.raises(DeclarationError, match=r"types\.invoices: pdf_logo: '\.\./logos/type\.png' must name a file"):
        declared_type(inside, declaration)
