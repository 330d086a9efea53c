"""Images for OCR, made in the child: image attachments decoded, scanned PDF pages rendered.

Run only inside the child process (mailbox.extraction.child). Decoding is where a hostile
image does its harm (a decompression bomb, a malformed header for a C decoder), so it
happens here, under the child's limits; Tesseract, which the parent runs afterwards
(mailbox.extraction.tesseract), only ever reads a grayscale PNG this module wrote, at most
ocr_pixels large. Nothing here runs OCR: images go into the Sink, which the child returns.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING

from mailbox.extraction.outcome import ExtractionLimits
from mailbox.extraction.sink import Sink, TooLarge, Unreadable

if TYPE_CHECKING:
    import pypdfium2 as pdfium
    from PIL.Image import Image

# The decoders Pillow may use: the formats mail carries scans and photos in. Others (EPS,
# which would call Ghostscript, and a dozen rarer ones) are never tried on a file.
FORMATS = ("PNG", "JPEG", "TIFF", "GIF", "BMP", "WEBP")
# Pillow's modules for them, loaded by the child before its audit hook is armed.
PRELOADS = (
    "PIL.Image",
    "PIL.PngImagePlugin",
    "PIL.JpegImagePlugin",
    "PIL.TiffImagePlugin",
    "PIL.GifImagePlugin",
    "PIL.BmpImagePlugin",
    "PIL.WebPImagePlugin",
)
_POINTS_PER_INCH = 72


def read_image(data: bytes, limits: ExtractionLimits, sink: Sink) -> None:
    """Hand an image to OCR: each page of a TIFF, the first frame of anything else.

    Edge cases: declared dimensions over image_pixels are too_large before a pixel is
    decoded; a format outside FORMATS, or a file its decoder rejects, is unreadable; with
    OCR off the image is counted as skipped and never decoded.
    """
    from PIL import Image, UnidentifiedImageError

    # Pillow's own bomb check fires at twice this; ours below at once it.
    Image.MAX_IMAGE_PIXELS = limits.image_pixels
    try:
        image = Image.open(io.BytesIO(data), formats=FORMATS)
    except Image.DecompressionBombError as error:
        raise TooLarge("pixels") from error
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as error:
        raise Unreadable("image") from error
    frames = getattr(image, "n_frames", 1) if image.format == "TIFF" else 1
    for index in range(frames):
        if not sink.wants_scan():
            return  # counted as skipped, so the outcome can say OCR did not see everything
        try:
            image.seek(index)
            width, height = image.size
            if width * height > limits.image_pixels:
                raise TooLarge("pixels")
            dpi = _dpi(image)
            if image.format == "JPEG":
                # Decode at the smallest JPEG scale still at least the size OCR gets.
                image.draft("L", _fitted(width, height, limits.ocr_pixels))
            page = _scaled(_grayscale(image), limits.ocr_pixels)
        except (OSError, ValueError, SyntaxError, EOFError) as error:
            raise Unreadable("image") from error
        sink.scan(_png(page), round(dpi * page.width / width))


def has_image(page: pdfium.PdfPage) -> bool:
    """Whether a PDF page draws an image (directly or inside a form), as a scanned page does."""
    import pypdfium2.raw as pdfium_c

    found = page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=3)
    return next(found, None) is not None


def scan_page(page: pdfium.PdfPage, limits: ExtractionLimits, sink: Sink) -> None:
    """Render a PDF page at ocr_dpi, or less if that would be over ocr_pixels, for OCR."""
    if not sink.wants_scan():
        return
    width, height = page.get_size()
    area = max(width * height, 1.0)
    scale = min(limits.ocr_dpi / _POINTS_PER_INCH, math.sqrt(limits.ocr_pixels / area))
    bitmap = page.render(scale=scale, grayscale=True)
    try:
        image = bitmap.to_pil().convert("L")
    finally:
        bitmap.close()
    sink.scan(_png(image), round(scale * _POINTS_PER_INCH))


def _fitted(width: int, height: int, max_pixels: int) -> tuple[int, int]:
    if width * height <= max_pixels:
        return width, height
    factor = math.sqrt(max_pixels / (width * height))
    return max(1, int(width * factor)), max(1, int(height * factor))


def _grayscale(image: Image) -> Image:
    """8-bit gray, with transparent areas white (dark text on a transparent PNG stays readable)."""
    from PIL import Image as PilImage

    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = PilImage.new("RGBA", rgba.size, (255, 255, 255, 255))
        return PilImage.alpha_composite(white, rgba).convert("L")
    return image.convert("L")


def _scaled(image: Image, max_pixels: int) -> Image:
    size = _fitted(image.width, image.height, max_pixels)
    return image if size == image.size else image.resize(size)


def _png(image: Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=1)  # fast: the bytes only travel down a pipe
    return out.getvalue()


def _dpi(image: Image) -> int:
    """The resolution the file declares, if a plausible one; 0 lets Tesseract estimate it."""
    declared = image.info.get("dpi")
    try:
        dpi = round(float(declared[0])) if declared else 0
    except (TypeError, ValueError, IndexError):
        return 0
    return dpi if 70 <= dpi <= 2400 else 0
