"""verify_statement: check an erasure statement's signature (docs/operations/erasure.md).

Reads a statement as JSON from a file (or `-` for standard input): the compliance API's
statement answer, or `{"document": ..., "signature": ..., "publicKey": ...}`. It is valid
when the signature signs the document, in canonical form, under the public key it names,
and that key is one of this deployment's statement keys. `--public-keys` prints those
keys (newest first), for a reader who checks statements with any Ed25519 tool.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.services.erasure import STATEMENT_PURPOSE, verify_statement
from mailfathom.core import signing


class Command(BaseCommand):
    help = "Check the signature of an erasure statement, or print this deployment's statement keys."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", help="The statement as JSON; - for standard input.")
        parser.add_argument("--public-keys", action="store_true", help="Print the statement keys and stop.")

    def handle(self, *args: object, **options: Any) -> None:
        if options["public_keys"]:
            for key in signing.public_keys(STATEMENT_PURPOSE):
                self.stdout.write(f"Ed25519 {key}")
            return
        if not options["file"]:
            raise CommandError("Name the statement's file, or - for standard input.")
        try:
            text = (
                sys.stdin.read() if options["file"] == "-" else open(options["file"], encoding="utf-8").read()
            )
            found = _parts(json.loads(text))
        except (OSError, ValueError) as error:
            raise CommandError("The file is not a statement in JSON.") from error
        document, signature, public_key = found
        if not verify_statement(document, signature, public_key):
            raise CommandError(
                "NOT VALID: the signature does not match this statement under this deployment's keys."
            )
        self.stdout.write(
            f"Valid: erasure request {document.get('request_id')} signed at {document.get('signed_at')} "
            f"with key {public_key}."
        )


def _parts(value: Any) -> tuple[dict[str, Any], str, str]:
    """(document, signature, public key) from a statement answer or a bare signed document."""
    if not isinstance(value, dict):
        raise ValueError("not an object")
    seal = value.get("signature")
    if isinstance(seal, dict):  # the API's statement: {"signedDocument": ..., "signature": {...}}
        document, signature, key = value.get("signedDocument"), seal.get("value"), seal.get("publicKey")
    else:
        document, signature, key = value.get("document"), seal, value.get("publicKey")
    if not isinstance(document, dict) or not isinstance(signature, str) or not isinstance(key, str):
        raise ValueError("no signed document")
    return document, signature, key
