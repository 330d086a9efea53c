"""Write the attachment files the extraction tests read: one of each kind, and hostile ones.

Every file here is made by this script from text written for it (no third-party sample is
vendored). Run it from the repository root with the project's environment:

    .venv/bin/python tests/data/attachments/make_files.py

It needs python-docx, openpyxl, python-pptx (runtime dependencies) and pypdf (a development
one, for the encrypted PDF). The PDFs with a text layer are written by hand, object by object,
so their bytes do not depend on a library's version. The scanned ones (images of text, for
OCR) are drawn with Pillow in a DejaVu or Liberation font, which only this script needs:
the tests read the files it wrote.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from datetime import datetime
from email.message import EmailMessage
from email.policy import SMTP
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Tax-number-like strings the tests look for in the extracted text.
TAX_NUMBER = "DE 298 765 432"
STEUERNUMMER = "143/815/08152"
SCANNED_STEUERNUMMER = "21/815/08150"
FONTS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
)
FIXED_DATE = (2024, 1, 2, 3, 4, 5)


def pdf(pages: list[str]) -> bytes:
    """A PDF with one page per string, each written in Helvetica; empty strings make empty pages."""
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, written once the page numbers are known
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    kids: list[int] = []
    empty_stream: int | None = None
    for text in pages:
        if text:
            lines = [
                line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
                for line in text.split("\n")
            ]
            ops = "BT /F1 12 Tf 72 720 Td 16 TL " + " ".join(f"({line}) '" for line in lines) + " ET"
            stream = ops.encode("cp1252")
            objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
            content = len(objects)
        else:
            if empty_stream is None:
                objects.append(b"<< /Length 0 >>\nstream\n\nendstream")
                empty_stream = len(objects)
            content = empty_stream
        objects.append(b"<< /Type /Page /Parent 2 0 R /Contents %d 0 R >>" % content)
        kids.append(len(objects))
    objects[1] = (
        b"<< /Type /Pages /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"
        b" /Count %d /Kids [%s] >>" % (len(kids), b" ".join(b"%d 0 R" % kid for kid in kids))
    )
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


INVOICE_PAGES = [
    "Rechnung Nr. 2024-0815\nDruckerreparatur Kyocera FS-1020\n"
    f"USt-IdNr.: {TAX_NUMBER}\nSteuernummer: {STEUERNUMMER}",
    "Page two: payment due within fourteen days.\nBankverbindung: Musterbank",
]


def encrypted_pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf(INVOICE_PAGES))))
    writer.encrypt(user_password="not-known", owner_password="also-not-known", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx_file() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Wartungsvertrag", level=1)
    document.add_paragraph("The maintenance contract covers the printer in room 4.12.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text = "Leistung"
    table.cell(0, 1).text = "Preis"
    table.cell(1, 0).text = "Tonerwechsel"
    table.cell(1, 1).text = "49,90 EUR"
    document.core_properties.created = datetime(2024, 1, 2, 3, 4, 5)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def xlsx_file() -> bytes:
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Angebot"
    sheet.append(["Position", "Menge", "Einzelpreis"])
    sheet.append(["Fixierwalze", 1, 129.5])
    sheet.append(["Arbeitszeit", 2, 85])
    sheet["E1"] = "=B2*C2"  # a formula: stored, never evaluated
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def pptx_file() -> bytes:
    import pptx

    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "Quarterly review"
    slide.placeholders[1].text = "Printer fleet uptime rose to 99 percent"
    slide.notes_slide.notes_text_frame.text = "Speaker notes: mention the Kyocera repair"
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


_ODF_TYPES = {
    "odt": "application/vnd.oasis.opendocument.text",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "odp": "application/vnd.oasis.opendocument.presentation",
}
_ODF_BODY = {
    "odt": "<office:text><text:h>Lieferschein</text:h><text:p>Lieferung von drei"
    "<text:s/>Tonerkartuschen<text:tab/>am Montag</text:p></office:text>",
    "ods": "<office:spreadsheet><table:table table:name='Kosten'><table:table-row>"
    "<table:table-cell><text:p>Stromkosten</text:p></table:table-cell>"
    "<table:table-cell><text:p>312</text:p></table:table-cell></table:table-row></table:table>"
    "</office:spreadsheet>",
    "odp": "<office:presentation><draw:page><draw:frame><draw:text-box><text:p>Folie eins: Budgetplanung"
    "</text:p></draw:text-box></draw:frame></draw:page></office:presentation>",
}


def opendocument(kind: str) -> bytes:
    content = (
        "<?xml version='1.0' encoding='UTF-8'?><office:document-content "
        "xmlns:office='urn:oasis:names:tc:opendocument:xmlns:office:1.0' "
        "xmlns:text='urn:oasis:names:tc:opendocument:xmlns:text:1.0' "
        "xmlns:table='urn:oasis:names:tc:opendocument:xmlns:table:1.0' "
        "xmlns:draw='urn:oasis:names:tc:opendocument:xmlns:drawing:1.0' office:version='1.2'>"
        f"<office:body>{_ODF_BODY[kind]}</office:body></office:document-content>"
    )
    manifest = (
        "<?xml version='1.0' encoding='UTF-8'?><manifest:manifest "
        "xmlns:manifest='urn:oasis:names:tc:opendocument:xmlns:manifest:1.0' manifest:version='1.2'>"
        f"<manifest:file-entry manifest:full-path='/' manifest:media-type='{_ODF_TYPES[kind]}'/>"
        "<manifest:file-entry manifest:full-path='content.xml' manifest:media-type='text/xml'/>"
        "</manifest:manifest>"
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype", FIXED_DATE), _ODF_TYPES[kind])
        for name, text in (("content.xml", content), ("META-INF/manifest.xml", manifest)):
            archive.writestr(zipfile.ZipInfo(name, FIXED_DATE), text, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def replaced_member(container: bytes, name: str, data: bytes, level: int = 6) -> bytes:
    """The zip container with one member's bytes replaced (the others copied as they are)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(container)) as source, zipfile.ZipFile(out, "w") as target:
        for member in source.infolist():
            body = data if member.filename == name else source.read(member.filename)
            info = zipfile.ZipInfo(member.filename, FIXED_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(info, body, compresslevel=level)
    return out.getvalue()


_WORD_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def zip_bomb_docx() -> bytes:
    """A DOCX whose document.xml unpacks to 300 MB of spaces inside a valid paragraph."""
    padding = b" " * (300 * 1024 * 1024)
    document = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="%s"><w:body>'
        b"<w:p><w:r><w:t>bomb</w:t></w:r></w:p>%s</w:body></w:document>" % (_WORD_NS.encode(), padding)
    )
    return replaced_member(docx_file(), "word/document.xml", document, level=9)


def xxe_docx() -> bytes:
    """A DOCX whose text is an external entity naming a local file."""
    document = (
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>'
        '<!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file:///etc/hostname">]>'
        f'<w:document xmlns:w="{_WORD_NS}"><w:body><w:p><w:r><w:t>host: &xxe;</w:t></w:r></w:p>'
        "</w:body></w:document>"
    )
    return replaced_member(docx_file(), "word/document.xml", document.encode())


def billion_laughs_xlsx() -> bytes:
    """An XLSX whose one cell expands ten entities tenfold each (10^9 "lol")."""
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{n} "{("&lol" + str(n - 1) + ";") * 10}">' for n in range(1, 10)
    )
    sheet = (
        f'<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE worksheet [{entities}]>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>&lol9;</t></is></c></row></sheetData></worksheet>'
    )
    return replaced_member(xlsx_file(), "xl/worksheets/sheet1.xml", sheet.encode())


def message_file() -> bytes:
    """A message with a text attachment and an attached message that carries a CSV."""
    inner = EmailMessage()
    inner["Subject"] = "Angebot Druckerwartung"
    inner["From"] = "service@example.net"
    inner.set_content("Anbei das Angebot fuer die Wartung.")
    inner.add_attachment(
        b"Position;Preis\nWartung;240\n", maintype="text", subtype="csv", filename="preise.csv"
    )
    outer = EmailMessage()
    outer["Subject"] = "Fwd: Angebot"
    outer["From"] = "office@example.org"
    outer.set_content("Forwarding the quote from the service company.")
    outer.add_attachment(
        b"Notiz: bitte bis Freitag freigeben.\n", maintype="text", subtype="plain", filename="notiz.txt"
    )
    outer.add_attachment(inner)
    return outer.as_bytes(policy=SMTP)


RTF = (
    rb"{\rtf1\ansi\deff0{\fonttbl{\f0 Times New Roman;}}"
    rb"\f0\fs24 Mahnung: die Rechnung f\'fcr den Drucker ist \b offen\b0 .\par}"
)
HTML = (
    b"<html><head><title>x</title><script>alert(1)</script></head>"
    b"<body><h1>Newsletter</h1><p>Neue Preise f&uuml;r Toner</p></body></html>"
)
CSV = b"Datum,Betrag,Zweck\n2024-03-01,120.00,Toner\n2024-03-05,85.50,Wartung\n"
TEXT = "Protokoll der Besprechung: Druckerreparatur genehmigt.\nÜbernahme der Kosten durch Abt. 3.\n".encode()


def _drawn(lines: list[str], size: tuple[int, int], points: int):
    """A white grayscale image with the lines drawn in black, as a 200 dpi scan would show them."""
    from PIL import Image, ImageDraw, ImageFont

    font_file = next((font for font in FONTS if Path(font).is_file()), None)
    if font_file is None:
        raise SystemExit("no DejaVu or Liberation font: apt-get install fonts-dejavu-core")
    font = ImageFont.truetype(font_file, points)
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    for number, line in enumerate(lines):
        draw.text((80, 80 + number * points * 2), line, font=font, fill=0)
    return image


SCANNED_PAGES = [
    ["Repair order 2024-117", "The fuser unit of the office printer was replaced."],
    [
        "Rechnung über die Reparatur",
        f"Steuernummer {SCANNED_STEUERNUMMER}",
        "Betrag fällig in vierzehn Tagen",
    ],
]


def scanned_pdf() -> bytes:
    """Two pages that are only images of text (Pillow's PDF writer adds no text layer)."""
    pages = [_drawn(lines, (1650, 700), 40) for lines in SCANNED_PAGES]
    out = io.BytesIO()
    pages[0].save(out, "PDF", resolution=200.0, save_all=True, append_images=pages[1:], quality=60)
    return out.getvalue()


def scanned_png() -> bytes:
    """A photographed-note stand-in: two lines of text in a bilevel PNG."""
    image = _drawn(["Lieferschein 4711", "Tonerkartusche geliefert und geprüft"], (1400, 400), 44)
    out = io.BytesIO()
    image.convert("1", dither=0).save(out, "PNG", optimize=True, dpi=(200, 200))
    return out.getvalue()


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def pixel_bomb_png() -> bytes:
    """A PNG that declares 100,000 by 100,000 pixels (10^10) in under a hundred bytes."""
    header = struct.pack(">IIBBBBB", 100_000, 100_000, 1, 0, 0, 0, 0)  # 1-bit gray
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + _png_chunk(b"IEND", b"")
    )


def files() -> dict[str, bytes]:
    invoice = pdf(INVOICE_PAGES)
    return {
        "invoice.pdf": invoice,
        "contract.docx": docx_file(),
        "quote.xlsx": xlsx_file(),
        "review.pptx": pptx_file(),
        "delivery.odt": opendocument("odt"),
        "costs.ods": opendocument("ods"),
        "budget.odp": opendocument("odp"),
        "reminder.rtf": RTF,
        "newsletter.html": HTML,
        "payments.csv": CSV,
        "minutes.txt": TEXT,
        "forwarded.eml": message_file(),
        "hostile-zip-bomb.docx": zip_bomb_docx(),
        "hostile-billion-laughs.xlsx": billion_laughs_xlsx(),
        "hostile-xxe.docx": xxe_docx(),
        "hostile-encrypted.pdf": encrypted_pdf(),
        "hostile-truncated.pdf": invoice[: len(invoice) // 2],
        "hostile-2000-pages.pdf": pdf([""] * 1999 + ["last page"]),
        "scanned.pdf": scanned_pdf(),
        "scanned-note.png": scanned_png(),
        "hostile-pixel-bomb.png": pixel_bomb_png(),
    }


if __name__ == "__main__":
    for name, data in files().items():
        (HERE / name).write_bytes(data)
        print(f"{name}: {len(data)} bytes")
