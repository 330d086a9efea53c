"""Attachment text extraction: attachments/s and MB/s per kind, with the child's cost as anchor.

Reads every attachment of the team corpus (mail-dev.tar.gz, plus the attached messages and
files of mime-torture/) and the vendored files of tests/data/attachments/ (the normal ones,
each repeated --repeat times), and extracts each through mailbox.extraction.extract_text:
a child process per attachment, as the pass does. Anchors in the same run:

- the child alone: a child started for a 1-byte text file, --anchor-rounds times (what
  isolation costs per attachment, whatever the kind);
- for PDF, the library choice: pypdfium2 and pypdf extracting the same PDFs in this process;
- for OCR (scanned PDF pages and images, where Tesseract is installed): the vendored scans
  and a full A4 page of text drawn at 300 dpi, against the bare `tesseract` command on that
  page (what our child, limits and process per image add).

Needs no database. Run: .venv/bin/python bench/attachment_extraction.py [--corpus DIR]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tarfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mailbox.extraction import ALL_KINDS, Extracted, Kind, extract_text, kind_of  # noqa: E402
from mailbox.extraction.outcome import ExtractionLimits  # noqa: E402
from mailbox.extraction.sandbox import run_child  # noqa: E402
from mailbox.extraction.tesseract import find_engine  # noqa: E402
from mailbox.parsing import attachment_bytes, parse_message  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
VENDORED = REPO / "tests" / "data" / "attachments"
MAX_BYTES = 25 * 1024 * 1024

Sample = tuple[str, str, bytes]  # media type, file name, bytes


def corpus_attachments(corpus: Path) -> tuple[list[Sample], int, int]:
    """Every attachment of the corpus's messages: (samples, messages read, attachments seen)."""
    samples: list[Sample] = []
    messages = seen = 0
    raws: list[bytes] = []
    with tarfile.open(corpus / "mail-dev.tar.gz") as archive:
        for member in archive:
            if member.isfile():
                handle = archive.extractfile(member)
                if handle is not None:
                    raws.append(handle.read())
    torture = corpus / "mime-torture"
    if torture.is_dir():
        raws.extend(path.read_bytes() for path in sorted(torture.rglob("*")) if path.is_file())
    for raw in raws:
        messages += 1
        for info in parse_message(raw).attachments:
            seen += 1
            data = attachment_bytes(raw, info.part_index)
            if data is not None:
                samples.append((info.media_type, info.file_name, data))
    return samples, messages, seen


def vendored(repeat: int) -> list[Sample]:
    files = [path for path in sorted(VENDORED.iterdir()) if path.suffix != ".py" and path.suffix != ".md"]
    # The scans are OCR's row (ocr_samples), which costs far more per file.
    normal = [path for path in files if not path.name.startswith(("hostile-", "scanned"))]
    return [("application/octet-stream", path.name, path.read_bytes()) for path in normal] * repeat


def hostile() -> list[Sample]:
    return [
        ("application/octet-stream", path.name, path.read_bytes())
        for path in sorted(VENDORED.glob("hostile-*"))
    ]


def run(samples: list[Sample]) -> dict[str, list[tuple[int, float, Extracted]]]:
    by_kind: dict[str, list[tuple[int, float, Extracted]]] = defaultdict(list)
    for media_type, name, data in samples:
        kind = kind_of(media_type, name)
        started = time.perf_counter()
        result = extract_text(data, media_type, name, kinds=ALL_KINDS, max_bytes=MAX_BYTES)
        elapsed = time.perf_counter() - started
        by_kind[kind.value if kind else f"none ({media_type})"].append((len(data), elapsed, result))
    return by_kind


def report(title: str, by_kind: dict[str, list[tuple[int, float, Extracted]]], anchor: float) -> None:
    print(f"\n{title}")
    print(
        f"{'kind':<34} {'files':>5} {'MB':>7} {'att/s':>7} {'MB/s':>7} {'s/file':>7} {'x child':>7}  outcomes"
    )
    for kind, rows in sorted(by_kind.items()):
        size = sum(row[0] for row in rows) / 1e6
        seconds = sum(row[1] for row in rows)
        outcomes: dict[str, int] = defaultdict(int)
        for row in rows:
            outcomes[row[2].outcome.value + ("+truncated" if row[2].truncated else "")] += 1
        per_file = seconds / len(rows)
        print(
            f"{kind[:34]:<34} {len(rows):>5} {size:>7.2f} {len(rows) / seconds:>7.1f} {size / seconds:>7.2f} "
            f"{per_file:>7.3f} {per_file / anchor:>7.2f}  {dict(outcomes)}"
        )


def opens(pdf: bytes) -> bool:
    import pypdfium2 as pdfium

    try:
        pdfium.PdfDocument(pdf).close()
    except pdfium.PdfiumError:
        return False
    return True


def pdf_libraries(pdfs: list[bytes], rounds: int) -> None:
    import pypdf
    import pypdfium2 as pdfium

    def with_pdfium(data: bytes) -> int:
        document = pdfium.PdfDocument(data)
        chars = sum(len(document[i].get_textpage().get_text_bounded()) for i in range(len(document)))
        document.close()
        return chars

    def with_pypdf(data: bytes) -> int:
        return sum(len(page.extract_text() or "") for page in pypdf.PdfReader(io.BytesIO(data)).pages)

    size = sum(len(pdf) for pdf in pdfs) * rounds / 1e6
    timings = {}
    for name, reader in (("pypdfium2", with_pdfium), ("pypdf", with_pypdf)):
        started = time.perf_counter()
        for _ in range(rounds):
            for pdf in pdfs:
                reader(pdf)
        timings[name] = time.perf_counter() - started
    print(f"\nPDF libraries in this process ({len(pdfs)} PDFs x {rounds} rounds, {size:.2f} MB):")
    for name, seconds in timings.items():
        print(f"  {name:<10} {len(pdfs) * rounds / seconds:>8.1f} PDFs/s {size / seconds:>8.2f} MB/s")
    print(f"  ratio pypdfium2 / pypdf speed: {timings['pypdf'] / timings['pypdfium2']:.1f}x")


def a4_page() -> bytes:
    """A PNG of a full A4 page at 300 dpi: forty lines of German and English text."""
    from PIL import Image, ImageDraw, ImageFont

    font_file = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
    font = ImageFont.truetype(font_file, 38) if Path(font_file).is_file() else ImageFont.load_default(38)
    image = Image.new("L", (2480, 3508), 255)
    draw = ImageDraw.Draw(image)
    line = "Rechnung 2024-{:03d}: Wartung des Druckers, Steuernummer 21/815/{:05d}, paid in full."
    for number in range(40):
        draw.text((180, 200 + number * 78), line.format(number, 8150 + number), font=font, fill=0)
    out = io.BytesIO()
    image.save(out, "PNG", dpi=(300, 300))
    return out.getvalue()


def ocr_samples(page: bytes) -> list[Sample]:
    return [
        ("application/pdf", "scanned.pdf", (VENDORED / "scanned.pdf").read_bytes()),
        ("image/png", "scanned-note.png", (VENDORED / "scanned-note.png").read_bytes()),
        ("image/png", "a4-page.png", page),
    ]


def bare_tesseract(page: bytes, rounds: int) -> float:
    """Median seconds of `tesseract stdin stdout -l deu+eng` on the page, without our limits."""
    import subprocess

    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run(
            ["tesseract", "stdin", "stdout", "-l", "deu+eng", "--dpi", "300"],
            input=page,
            capture_output=True,
            check=True,
            env={"PATH": "/usr/bin:/bin", "OMP_THREAD_LIMIT": "1"},
        )
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--repeat", type=int, default=10, help="rounds of the vendored files")
    parser.add_argument("--anchor-rounds", type=int, default=30)
    parser.add_argument("--ocr-rounds", type=int, default=3, help="rounds of the OCR samples")
    args = parser.parse_args()

    child = []
    for _ in range(args.anchor_rounds):
        started = time.perf_counter()
        run_child(Kind.TEXT, b"x", ExtractionLimits())
        child.append(time.perf_counter() - started)
    anchor = statistics.median(child)
    print(f"anchor: a child for a 1-byte text file, median of {len(child)}: {anchor * 1000:.1f} ms")

    samples, messages, seen = corpus_attachments(args.corpus)
    print(f"corpus: {messages} messages, {seen} attachments, {len(samples)} read back")
    report("Corpus attachments (every one, as the pass would see it)", run(samples), anchor)
    report(f"Vendored files, {args.repeat} rounds", run(vendored(args.repeat)), anchor)
    report("Hostile files, once each", run(hostile()), anchor)
    # The corpus's PDFs that PDFium opens (a broken one is the pass's business, not this race's),
    # the vendored invoice and the 2,000-page file.
    pdfs = [data for _, name, data in vendored(1) if name.endswith(".pdf")]
    pdfs += [data for media, name, data in samples if kind_of(media, name) is Kind.PDF and opens(data)]
    pdfs.append((VENDORED / "hostile-2000-pages.pdf").read_bytes())
    pdf_libraries(pdfs, max(1, args.repeat))

    if find_engine() is None:
        print("\nOCR: no Tesseract with deu or eng here; skipped")
        return
    page = a4_page()
    report(f"OCR samples, {args.ocr_rounds} rounds", run(ocr_samples(page) * args.ocr_rounds), anchor)
    bare = bare_tesseract(page, args.ocr_rounds)
    print(f"anchor: bare tesseract on the A4 page, median of {args.ocr_rounds}: {bare:.2f} s")


if __name__ == "__main__":
    main()
