"""A checked logo (:mod:`exports.core.logos`) written into a PDF as an image XObject, with its
alpha channel as a soft mask, from the bytes the check kept: no pixel is decoded."""

from __future__ import annotations

from exports.core.logos import PdfImage, predictor
from exports.running.writers.pdf.objects import PdfObjects


def put_image(image: PdfImage, objects: PdfObjects) -> int:
    """Write ``image`` (and its soft mask) into ``objects``; the image's object number."""
    number = objects.reserve()
    entries = b" /Type /XObject /Subtype /Image /Width %d /Height %d%s" % (image.width, image.height, image.entries)
    if image.alpha is not None:
        mask = objects.reserve()
        objects.put_stream(
            mask,
            image.alpha,
            b" /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8"
            b" /Filter /FlateDecode /DecodeParms %s" % (image.width, image.height, predictor(1, 8, image.width)),
            compress=False,
        )
        entries += b" /SMask %d 0 R" % mask
    objects.put_stream(number, image.data, entries, compress=False)
    return number
