"""Backfill throughput: MailFathom's IMAP synchronization against a bare fetch loop and notmuch.

Run from the repository root with the project's interpreter:

    .venv/bin/python bench/sync.py [--messages 5000] [--profile]

One run measures, over the same N real messages (an even sample of
../shared/corpus/mail-dev.tar.gz):

  (a) the anchor: one imapclient session fetching every message with BODY.PEEK[] in
      batches of 100 from a private Dovecot (tests/dovecot.py) -- the IMAP floor;
  (b) MailFathom: mailbox.sync.engine.synchronize_account backfilling the same folder into
      PostgreSQL (a throwaway database, dropped and re-created each run; never the
      developer's `mailfathom` database), at N/5 and at N messages, each in a fresh Python
      process so its peak RSS (ru_maxrss) belongs to that backfill alone;
  (c) `notmuch new` indexing the same messages as a local Maildir (skipped, with a
      message, when notmuch is not installed);
  (d) `manage.py import_mail` of the same messages from local disk into a fresh account,
      once as one Maildir and once spread over --import-folders Maildirs under one folder
      (one invocation each, in a fresh process; --skip-import leaves it out), reported per
      message against (b) of the same round.

It prints the three rates, the ratios MailFathom/anchor and MailFathom/notmuch, and the
backfill's peak memory at both sizes. `--profile` adds a cProfile run of the backfill at
N/5 and a summary of where its time goes. Results and their reading: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections import Counter
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "mail-dev.tar.gz"  # --corpus names another folder
BENCH_DATABASE = "mailfathom_bench"
LARGE_USER = "pool120"  # N messages: anchor, timed backfill, notmuch's copy
SMALL_USER = "pool119"  # N/5 messages: second memory point, profile
ANCHOR_BATCH = 100
RESULT_MARKER = "BENCH-RESULT "
MB = 1_000_000


@dataclass
class Rate:
    label: str
    messages: int
    seconds: float
    megabytes: float
    cpu_seconds: float | None = None  # CPU the measured work used, where known

    @property
    def per_second(self) -> float:
        return self.messages / self.seconds

    @property
    def mb_per_second(self) -> float:
        return self.megabytes / self.seconds


# --- Django -----------------------------------------------------------------------------


def setup_django(database: str, *, server_side_binding: bool = False) -> None:
    """Configure Django on `database` (same server as the product's, never its database).

    `server_side_binding` is an experiment (--server-side-binding), not the product's setting.
    """
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    os.environ["DJANGO_SETTINGS_MODULE"] = "mailfathom.settings"
    import django
    from django.conf import settings

    product = settings.DATABASES["default"]["NAME"]
    if database == product:
        raise SystemExit(f"refusing to benchmark into the product database {product!r}")
    settings.DATABASES["default"]["NAME"] = database
    if server_side_binding:
        options = settings.DATABASES["default"].setdefault("OPTIONS", {})
        options["server_side_binding"] = True
    django.setup()


def use_scripted_server(base_url: str, *, embed: bool) -> None:
    """Point chat (and, with `embed`, embeddings) at the scripted OpenAI-compatible server at `base_url`."""
    from django.conf import settings

    settings.MAILFATHOM = settings.MAILFATHOM.replace(
        chat_provider="openai",
        chat_alias="scripted",
        chat_base_url=base_url,
        chat_model="scripted",
        chat_api_key="k",
        embedding_provider="openai" if embed else "none",
        embedding_base_url=base_url,
        embedding_model="text-embed",
        embedding_api_key="k",
    )


def _server_connection(dbname: str):
    """Open an autocommit psycopg connection to `dbname` on the configured server."""
    import psycopg
    from django.conf import settings

    params = settings.DATABASES["default"]
    wanted = {
        "host": params.get("HOST"),
        "port": params.get("PORT"),
        "user": params.get("USER"),
        "password": params.get("PASSWORD"),
    }
    return psycopg.connect(dbname=dbname, autocommit=True, **{k: v for k, v in wanted.items() if v})


def recreate_database(name: str) -> str:
    """Drop and create the bench database; return the server's version string."""
    from psycopg import sql

    with _server_connection("postgres") as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return str(conn.execute("SHOW server_version").fetchone()[0])


def drop_database(name: str) -> None:
    from django.db import connections
    from psycopg import sql

    connections.close_all()
    with _server_connection("postgres") as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def migrated_database(name: str) -> str:
    """Drop and create the bench database with every migration applied; return the server's version."""
    from django.core.management import call_command
    from django.db import connections

    connections.close_all()  # DROP ... WITH (FORCE) would otherwise end this process's own session
    version = recreate_database(name)
    call_command("migrate", verbosity=0)
    return version


# --- corpus and Maildirs ----------------------------------------------------------------


_ID_FIELDS = (b"message-id:", b"in-reply-to:", b"references:")
_BRACKETED_AT = re.compile(rb"<([^<>@\s]+)@")


def with_copy_ids(raw: bytes, copy: int) -> bytes:
    """The message as copy number `copy`: its Message-ID, In-Reply-To and References renamed.

    Copies beyond the corpus must not share ids with the original: threading would join
    every copy into one conversation, and notmuch would index them as one message.
    """
    end = raw.find(b"\n\n")
    end = len(raw) if end < 0 else end
    lines = raw[:end].split(b"\n")
    renaming = False
    for index, line in enumerate(lines):
        if line[:1] not in (b" ", b"\t"):
            renaming = line.lower().startswith(_ID_FIELDS)
        if renaming:
            lines[index] = _BRACKETED_AT.sub(rb"<\1.copy%d@" % copy, line)
    return b"\n".join(lines) + raw[end:]


def load_corpus(count: int) -> list[tuple[str, bytes]]:
    """Return `count` messages evenly spread over the corpus (every group in proportion).

    Beyond the corpus's size it is taken whole as many times as needed, each copy's ids
    renamed (with_copy_ids).
    """
    if not CORPUS.exists():
        raise SystemExit(f"corpus not found: {CORPUS}")
    with tarfile.open(CORPUS) as archive:
        members = sorted(
            (m for m in archive.getmembers() if m.isfile() and "/cur/" in m.name), key=lambda m: m.name
        )
        if count > len(members):
            copies = -(-count // len(members))
            names = [m.name for m in members]
            whole = _read_members(names)
            messages = [
                (name.rsplit("/", 1)[-1], with_copy_ids(whole[name], copy) if copy else whole[name])
                for copy in range(copies)
                for name in names
            ]
            return messages[:count]
        chosen = [members[i * len(members) // count].name for i in range(count)]
    contents = _read_members(chosen)
    return [(name.rsplit("/", 1)[-1], contents[name]) for name in chosen]


def _read_members(chosen: list[str]) -> dict[str, bytes]:
    wanted = set(chosen)
    contents: dict[str, bytes] = {}
    with tarfile.open(CORPUS) as archive:  # one pass in archive order: a .gz cannot seek back
        for member in archive:
            if member.name in wanted:
                handle = archive.extractfile(member)
                if handle is None:
                    raise SystemExit(f"cannot read {member.name} from {CORPUS}")
                contents[member.name] = handle.read()
    return contents


def wire_size(raw: bytes) -> int:
    """Bytes of the message as IMAP sends it: every bare LF becomes CRLF."""
    return len(raw) + raw.count(b"\n") - raw.count(b"\r\n")


def flags_of(name: str) -> str:
    return name.split(":2,", 1)[1] if ":2," in name else ""


def write_maildir(
    maildir: Path, messages: list[tuple[str, bytes]], *, owner: tuple[int, int] | None = None
) -> None:
    """Write `messages` into maildir/cur, named as Dovecot names delivered mail (S=, W= sizes)."""
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True, exist_ok=True)
    for index, (name, raw) in enumerate(messages):
        base = f"{1_700_000_000 + index}.M{index}P{os.getpid()}.mfbench,S={len(raw)},W={wire_size(raw)}"
        (maildir / "cur" / f"{base}:2,{flags_of(name)}").write_bytes(raw)
    if owner is not None:
        for path in [maildir, *maildir.rglob("*")]:
            os.chown(path, *owner)


def import_corpus(count: int, display_name: str) -> None:
    """Import `count` corpus messages into a new account "bench" (folder alias "all") with import_archive."""
    from accounts.models import FolderRole
    from mailbox.services.importer import import_archive
    from tests.factories import FolderMappingFactory, MailAccountFactory

    account = MailAccountFactory(account_id="bench", display_name=display_name)
    FolderMappingFactory(account=account, alias="all", remote_name="INBOX", role=FolderRole.INBOX)
    with tempfile.TemporaryDirectory() as scratch:
        write_maildir(Path(scratch) / "mail", load_corpus(count))
        import_archive("bench", "all", Path(scratch) / "mail")


def seed_user(server, user: str, messages: list[tuple[str, bytes]]) -> None:
    """Lay `messages` into the user's INBOX on disk (before the user's first login)."""
    home = server.root / "mail" / user
    stat = home.stat()
    write_maildir(server.maildir(user), messages, owner=(stat.st_uid, stat.st_gid))


def warm_up(server, user: str, password: str, expected: int) -> None:
    """Let Dovecot assign UIDs and build its index (untimed: a live server has done so)."""
    from imapclient import IMAPClient

    with IMAPClient(server.host, port=server.imap_port, ssl=False, timeout=120) as client:
        client.login(user, password)
        selected = client.select_folder("INBOX", readonly=True)
        if int(selected[b"EXISTS"]) != expected:
            raise SystemExit(f"Dovecot shows {selected[b'EXISTS']} messages for {user}, seeded {expected}")
        uids = client.search(["ALL"])
        for start in range(0, len(uids), 5000):  # one command naming 100,000 UIDs is too long
            client.fetch(uids[start : start + 5000], ["FLAGS", "RFC822.SIZE", "INTERNALDATE"])


# --- (a) anchor -------------------------------------------------------------------------


def run_anchor(server, user: str, password: str, batch: int) -> Rate:
    from imapclient import IMAPClient

    started = time.perf_counter()
    client = IMAPClient(server.host, port=server.imap_port, ssl=False, timeout=120)
    client.login(user, password)
    client.select_folder("INBOX", readonly=True)
    uids = client.search(["ALL"])
    count = size = 0
    for start in range(0, len(uids), batch):
        for info in client.fetch(uids[start : start + batch], ["BODY.PEEK[]"]).values():
            count += 1
            size += len(info[b"BODY[]"])
    client.logout()
    return Rate("(a) anchor: imapclient BODY.PEEK[]", count, time.perf_counter() - started, size / MB)


# --- (b) MailFathom backfill, in a fresh process ----------------------------------------


def run_backfill_child(spec: dict) -> dict:
    """Start this script as a child that backfills one account; return its result."""
    return run_script_child(Path(__file__).resolve(), spec)


def run_script_child(script: Path, spec: dict) -> dict:
    """Run `script --child SPEC` in a fresh process, pass its output through, return its result line."""
    command = [sys.executable, str(script), "--child", json.dumps(spec)]
    done = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, text=True, check=False)
    lines = done.stdout.splitlines()
    for line in lines:
        if not line.startswith(RESULT_MARKER):
            print(line)
    results = [line for line in lines if line.startswith(RESULT_MARKER)]
    if done.returncode != 0 or not results:
        raise SystemExit(f"the child {script.name} failed (exit {done.returncode}); see its output above")
    return json.loads(results[-1][len(RESULT_MARKER) :])


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def start_peak_window() -> tuple[int, bool]:
    """Reset the process's peak RSS to its current RSS; return (current KiB, whether it reset).

    ru_maxrss alone is no good in a child: Linux carries the parent's peak across exec into
    it. Writing 5 to /proc/self/clear_refs resets the peak (VmHWM) to the current RSS, so
    the peak read afterwards belongs to the backfill. Without /proc, ru_maxrss is used.
    """
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, False
    return _status_kib("VmRSS") or 0, True


def peak_rss_kib(reset: bool) -> int:
    peak = _status_kib("VmHWM") if reset else None
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


SQL_TIMES: dict[str, list] = {}  # statement kind -> [count, seconds], filled under --profile


def sql_timer(execute, sql, params, many, context):
    """Django execute wrapper: time each statement in the driver, by kind and table."""
    words = sql.split(None, 4)
    verb = words[0].upper() if words else "?"
    table = next((w.strip('"') for w in words[1:] if w.strip('"').startswith(("mailbox_", "accounts_"))), "")
    if verb == "SELECT":
        table = (
            "SUM(stored_size)" if "SUM(" in sql else sql.split(" FROM ", 1)[-1].split(None, 1)[0].strip('"')
        )
    kind = f"{verb} {table}".strip()
    started = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    finally:
        entry = SQL_TIMES.setdefault(kind, [0, 0.0])
        entry[0] += 1
        entry[1] += time.perf_counter() - started


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) used so far by process `pid`; None when /proc cannot say.

    The PostgreSQL backend serving the backfill runs the INSERTs: its CPU is MailFathom's
    too, and unlike wall time it barely moves when other work shares the machine.
    """
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_account(account_id: str, host: str, port: int, user: str, password: str):
    """A fresh account with one mapping, inbox -> INBOX, as the backfill and the import use it."""
    from accounts.models import FolderMapping, FolderRole, MailAccount, Security

    account = MailAccount(
        account_id=account_id,
        display_name=f"Bench {account_id}",
        imap_host=host,
        imap_port=port,
        security=Security.NONE,
        username=user,
    )
    account.set_credential(password)
    account.full_clean()
    account.save()
    FolderMapping.objects.create(account=account, alias="inbox", remote_name="INBOX", role=FolderRole.INBOX)
    return account


def child_main(spec: dict) -> None:
    if spec.get("import_path"):
        import_child(spec)
        return
    setup_django(spec["database"], server_side_binding=spec.get("server_side_binding", False))
    from mailbox.models import Email, Folder, Participant, RawMessage
    from mailbox.sync.engine import synchronize_account

    account = bench_account(spec["account_id"], spec["host"], spec["port"], spec["user"], spec["password"])

    # Watch memory batch by batch: wrap (not change) the engine's call into the store, and
    # note the RSS after each stored batch and the largest batch's bytes.
    import mailbox.sync.engine as engine

    batches: list[tuple[int, int]] = []  # (bytes of bodies in the batch, RSS KiB after it)
    store = engine.store_prepared

    def watched_store(folder, prepared, **kwargs):
        stored = store(folder, prepared, **kwargs)
        batches.append((sum(len(p.message.raw or b"") for p in prepared), _status_kib("VmRSS") or 0))
        return stored

    engine.store_prepared = watched_store
    engine.PARSE_AHEAD = spec.get("parse_ahead", engine.PARSE_AHEAD)
    # Which batches were parsed on the second thread (mailbox.sync.spare_core decides).
    parsed_where: Counter[str] = Counter()
    prepare = engine.prepare_messages

    def counted_prepare(messages):
        parsed_where["ahead" if threading.current_thread().name.startswith("sync-parse") else "inline"] += 1
        return prepare(messages)

    engine.prepare_messages = counted_prepare
    profiler = None
    if spec.get("profile"):
        import cProfile

        profiler = cProfile.Profile()
    from django.db import connection

    with connection.cursor() as cursor:  # the session the backfill goes on to use
        cursor.execute("SELECT pg_backend_pid()")
        backend = int(cursor.fetchone()[0])
    rss_before, peak_reset = start_peak_window()
    cpu_before, backend_before = _own_cpu(), process_cpu(backend)
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    with connection.execute_wrapper(sql_timer) if profiler is not None else nullcontext():
        run = synchronize_account(account.pk)
    if profiler is not None:
        profiler.disable()
    seconds = time.perf_counter() - started
    cpu_after, backend_after = _own_cpu(), process_cpu(backend)
    rss_after = peak_rss_kib(peak_reset)

    stored = Email.objects.filter(account=account).count()
    with_content = RawMessage.objects.filter(email__account=account).count()
    failures = [f.failure_code for f in run.folders if f.failure_code] + (
        [run.failure_code] if run.failure_code else []
    )
    if run.skipped or failures or stored != spec["expected"] or with_content != spec["expected"]:
        folder = Folder.objects.filter(account=account).first()
        raise SystemExit(
            f"backfill incomplete: skipped={run.skipped!r} failures={failures} stored={stored} "
            f"with content={with_content} expected={spec['expected']} "
            f"folder failure={folder.last_failure_code if folder else None}"
        )
    result = {
        "messages": stored,
        "seconds": seconds,
        "rss_before_kib": rss_before,
        "rss_after_kib": rss_after,
        "peak_reset": peak_reset,
        "cpu_seconds": cpu_after - cpu_before,
        "postgres_cpu_seconds": (
            backend_after - backend_before
            if backend_after is not None and backend_before is not None
            else None
        ),
        "batches_parsed_ahead": parsed_where["ahead"],
        "batches_parsed_inline": parsed_where["inline"],
        "largest_batch_bytes": max((size for size, _ in batches), default=0),
        "batch_bytes": [size for size, _ in batches],
        "rss_after_batches_kib": [rss for _, rss in batches],
    }
    if profiler is not None:
        result["profile"] = profile_summary(profiler, spec.get("profile_out"))
        result["profile"]["sql"] = sorted(SQL_TIMES.items(), key=lambda item: -item[1][1])
        result["profile"]["participants"] = Participant.objects.filter(email__account=account).count()
    print(RESULT_MARKER + json.dumps(result), flush=True)


def import_child(spec: dict) -> None:
    """(d): `manage.py import_mail` of a local tree into a fresh account, in this process."""
    setup_django(spec["database"])
    from django.core.management import call_command

    from mailbox.models import Email

    account = bench_account(spec["account_id"], "127.0.0.1", 1, "bench", "unused")  # never connected
    cpu_before = _own_cpu()
    started = time.perf_counter()
    call_command(
        "import_mail", spec["import_path"], account=spec["account_id"], folder="inbox", no_progress=True
    )
    seconds = time.perf_counter() - started
    stored = Email.objects.filter(account=account).count()
    if stored != spec["expected"]:
        raise SystemExit(f"import incomplete: stored={stored} expected={spec['expected']}")
    cpu = _own_cpu() - cpu_before
    print(RESULT_MARKER + json.dumps({"messages": stored, "seconds": seconds, "cpu_seconds": cpu}))


def run_import(spec: dict) -> tuple[dict, float]:
    """Run the import child; returns its result and the wall time of the whole invocation
    (interpreter and Django start-up included)."""
    started = time.perf_counter()
    result = run_backfill_child(spec)
    return result, time.perf_counter() - started


def write_tree(root: Path, messages: list[tuple[str, bytes]], folders: int) -> None:
    """The messages spread over `folders` small Maildirs under `root` (an archive of many folders)."""
    for index in range(folders):
        write_maildir(root / f"folder-{index:04d}", messages[index::folders])


# --- profile ----------------------------------------------------------------------------

# label -> "how file-suffix function[|function]": "ct" sums the cumulative time of the
# functions (they and all they call), "tt" their own time. Rows do not nest in one another
# except those starting "of which", which are part of the row above them.
PROFILE_ROWS = {
    "IMAP: IMAPClient.fetch (wire wait + parsing)": "ct imapclient/imapclient.py fetch",
    "  of which imapclient parsing the response": "ct imapclient/response_parser.py parse_fetch_response",
    "IMAP: login, select, search, logout": "ct imapclient/imapclient.py login|select_folder|search|logout",
    "IMAP: TLS context (open_client, even for none)": "ct accounts/services/imap.py tls_context",
    "MIME parsing: parse_message": "ct mailbox/parsing/message.py parse_message",
    "  of which address headers (parse_addresses)": "ct mailbox/parsing/fields.py parse_addresses",
    "  of which charset guessing (charset_normalizer)": "ct charset_normalizer/api.py from_bytes",
    "  of which HTML to text (html_to_text)": "ct mailbox/parsing/htmltext.py html_to_text",
    "zlib.compress, level 6": "tt ~ <built-in method zlib.compress>",
    "sha256 of the raw message": "tt ~ <built-in method _hashlib.openssl_sha256>",
    "INSERTs: QuerySet.bulk_create (ORM + SQL)": "ct django/db/models/query.py bulk_create",
    "  of which Django compiling the INSERT (as_sql)": "ct django/db/models/sql/compiler.py as_sql@INSERT",
    "row building: _email_row + _participants": "ct mailbox/services/store.py _email_row|_participants",
    "storage ceiling: stored_bytes (a SUM per batch)": "ct mailbox/services/store.py stored_bytes",
    "transaction commit (atomic __exit__)": "ct django/db/transaction.py __exit__",
    "lease renewal: renew_lease": "ct mailbox/sync/folder_state.py renew_lease",
    "flag pass: _reconcile_flags": "ct mailbox/sync/engine.py _reconcile_flags",
    "module imports during the run": "ct importlib._bootstrap> _find_and_load",
    "(all SQL, driver + server: CursorWrapper._execute)": "ct django/db/backends/utils.py _execute",
}


def profile_summary(profiler, out: str | None) -> dict:
    import io
    import pstats

    stats = pstats.Stats(profiler)
    if out:
        stats.dump_stats(out)
    table = stats.stats  # type: ignore[attr-defined]  # pstats keeps its table in an undeclared attribute
    from django.db.models.sql.compiler import SQLInsertCompiler

    insert_line = SQLInsertCompiler.as_sql.__code__.co_firstlineno
    total = max(
        (ct for (file, _, name), (_, _, _, ct, _) in table.items() if name == "synchronize_account"),
        default=0.0,
    )
    rows = []
    for label, where in PROFILE_ROWS.items():
        how, suffix, names = where.split(" ", 2)
        wanted = set(names.split("|"))
        seconds = 0.0
        for (file, line, name), (_, _, tt, ct, _) in table.items():
            if name == "as_sql" and "as_sql@INSERT" in wanted and file.endswith(suffix):
                seconds += ct if line == insert_line else 0.0
            elif name in wanted and file.endswith(suffix):
                seconds += ct if how == "ct" else tt
        rows.append([label, seconds])
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
    top = [line for line in text.getvalue().splitlines() if line.strip()]
    return {"total": total, "rows": rows, "top_tottime": top[-16:]}


# --- (c) notmuch ------------------------------------------------------------------------


@dataclass
class Notmuch:
    binary: str
    maildir: Path
    env: dict


def prepare_notmuch(messages: list[tuple[str, bytes]], workdir: Path) -> Notmuch | None:
    """Write the messages as a Maildir and a notmuch config beside it; None without notmuch."""
    binary = shutil.which("notmuch")
    if binary is None:
        print("(c) skipped: notmuch is not installed (Debian: apt-get install -y notmuch)")
        return None
    maildir = workdir / "mail"
    write_maildir(maildir, messages)
    config = workdir / "notmuch-config"
    config.write_text(
        f"[database]\npath={maildir}\n\n[new]\ntags=\nignore=\n\n[search]\nexclude_tags=\n\n"
        "[maildir]\nsynchronize_flags=false\n"
    )
    return Notmuch(binary, maildir, {**os.environ, "NOTMUCH_CONFIG": str(config), "HOME": str(workdir)})


def run_notmuch(notmuch: Notmuch, expected: int, megabytes: float) -> Rate:
    """Time `notmuch new` into a fresh database over the prepared Maildir."""
    shutil.rmtree(notmuch.maildir / ".notmuch", ignore_errors=True)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([notmuch.binary, "new", "--quiet"], env=notmuch.env, check=True, capture_output=True)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    counted = subprocess.run(
        [notmuch.binary, "count", "--output=files", "*"],
        env=notmuch.env,
        check=True,
        capture_output=True,
        text=True,
    )
    files = int(counted.stdout.strip())
    if files != expected:
        print(f"(c) warning: notmuch indexed {files} files of {expected}")
    return Rate("(c) notmuch new", files, seconds, megabytes, cpu_seconds=cpu)


def notmuch_version() -> str:
    binary = shutil.which("notmuch")
    if binary is None:
        return "not installed"
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


# --- report -----------------------------------------------------------------------------


def commit() -> str:
    """The checkout's short commit, marked when tracked files have uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
        ).stdout
        return head + (" (with uncommitted changes)" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def print_report(rounds: list[tuple[Rate, Rate, Rate | None]], memory: list[dict]) -> None:
    """Print the best of each measurement, the ratios, every round, and the memory points."""
    best_anchor = max((r[0] for r in rounds), key=lambda rate: rate.per_second)
    best_backfill = max((r[1] for r in rounds), key=lambda rate: rate.per_second)
    indexed = [r[2] for r in rounds if r[2] is not None]
    best_notmuch = max(indexed, key=lambda rate: rate.per_second) if indexed else None
    print()
    title = "best of each" if len(rounds) > 1 else "one round"
    print(f"{title:44} {'messages':>8} {'seconds':>8} {'msg/s':>8} {'MB/s':>7} {'CPU s':>7}")
    for rate in [best_anchor, best_backfill] + ([best_notmuch] if best_notmuch else []):
        cpu = f"{rate.cpu_seconds:7.2f}" if rate.cpu_seconds is not None else "      -"
        print(
            f"{rate.label:44} {rate.messages:>8} {rate.seconds:>8.2f} "
            f"{rate.per_second:>8.0f} {rate.mb_per_second:>7.2f} {cpu}"
        )
    print()
    print(f"MailFathom / anchor : {best_backfill.per_second / best_anchor.per_second:.2f}")
    if best_notmuch is not None:
        print(f"MailFathom / notmuch: {best_backfill.per_second / best_notmuch.per_second:.2f}")
        least_mailfathom = min(r[1].cpu_seconds or 0.0 for r in rounds)
        least_notmuch = min(rate.cpu_seconds or 0.0 for rate in indexed)
        if least_mailfathom and least_notmuch:
            print(
                f"MailFathom / notmuch by CPU seconds used (least of each; notmuch's / MailFathom's): "
                f"{least_notmuch / least_mailfathom:.2f}"
            )
    else:
        print("MailFathom / notmuch: n/a (notmuch not installed)")
    print(
        "(CPU s: MailFathom's is its Python process plus its PostgreSQL backend, Dovecot left out; "
        "notmuch's is the notmuch process)"
    )
    if len(rounds) > 1:
        print()
        print(
            "every round: msg/s of anchor, MailFathom, notmuch; MailFathom/notmuch; CPU s MailFathom, notmuch"
        )
        for number, (anchor, backfill, notmuch) in enumerate(rounds, 1):
            third = f"{notmuch.per_second:6.0f}" if notmuch else "   n/a"
            ratio = f"{backfill.per_second / notmuch.per_second:.2f}" if notmuch else " n/a"
            cpus = f"{backfill.cpu_seconds or 0:6.2f} {notmuch.cpu_seconds or 0:6.2f}" if notmuch else ""
            rates = f"{anchor.per_second:6.0f} {backfill.per_second:6.0f} {third}"
            print(f"  round {number}: {rates}  {ratio}  {cpus}")
    print()
    how = "VmHWM after resetting it" if all(p["peak_reset"] for p in memory) else "ru_maxrss"
    print(f"Backfill peak memory (a fresh process each; {how} at the start of the backfill):")
    for point in memory:
        before, after = point["rss_before_kib"] / 1024, point["rss_after_kib"] / 1024
        print(
            f"  {point['messages']:>6} messages: RSS at start {before:6.1f} MiB, peak {after:6.1f} MiB, "
            f"growth {after - before:5.1f} MiB, {point['messages'] / point['seconds']:.0f} msg/s, "
            f"CPU {point['cpu_seconds']:.2f} s + PostgreSQL {point['postgres_cpu_seconds'] or 0:.2f} s"
        )
        trail = point["rss_after_batches_kib"]
        if trail:
            marks = [trail[0], trail[len(trail) // 4], trail[len(trail) // 2], trail[-1]]
            shown = " / ".join(f"{mark / 1024:.1f}" for mark in marks)
            print(
                f"  {'':>6}           RSS after the first, 1/4, 1/2 and last of {len(trail)} batches: "
                f"{shown} MiB; largest batch {point['largest_batch_bytes'] / MB:.1f} MB of bodies"
            )


def print_imports(imports: list[tuple[int, str, dict, Rate]], folders: int) -> None:
    """(d) against (b) of the same round: messages per second, import over backfill."""
    if not imports:
        return
    print()
    print(
        f"(d) import_mail of the same messages, one invocation each: 'one' = a single Maildir, "
        f"'tree' = {folders} Maildirs under one folder; against (b) of the same round"
    )
    for number, shape, run, backfill in imports:
        rate = run["messages"] / run["seconds"]
        with_start = run["messages"] / run["wall_seconds"]
        print(
            f"  round {number} {shape:4}: {rate:6.0f} msg/s ({with_start:.0f} with start-up), CPU "
            f"{run['cpu_seconds']:.2f} s; import / backfill {rate / backfill.per_second:.2f} "
            f"({with_start / backfill.per_second:.2f} with start-up)"
        )


def print_profile(profile: dict, messages: int) -> None:
    total = profile["total"] or 1.0
    print()
    print(f"Profile of the backfill of {messages} messages (cProfile; {total:.2f} s under the profiler):")
    for label, seconds in profile["rows"]:
        print(f"  {label:58} {seconds:7.2f} s {100 * seconds / total:5.1f} %")
    print()
    print(f"SQL by statement, wall time in the driver ({profile['participants']} participant rows stored):")
    for kind, (count, seconds) in profile["sql"][:10]:
        print(f"  {kind:58} {count:6} x {seconds:7.2f} s {100 * seconds / total:5.1f} %")
    print()
    print("Top functions by own time:")
    for line in profile["top_tottime"]:
        print("  " + line)


# --- main -------------------------------------------------------------------------------


def main() -> None:
    global CORPUS  # --corpus replaces the default before anything reads it
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=5000, help="N, messages to load (default 5000)")
    parser.add_argument("--database", default=BENCH_DATABASE, help="throwaway database, re-created each run")
    parser.add_argument(
        "--repeat", type=int, default=1, help="rounds of (a), (b), (c) at N; the best of each is reported"
    )
    parser.add_argument(
        "--server-side-binding",
        action="store_true",
        help="experiment: run the backfills with psycopg server-side binding (not the product's setting)",
    )
    parser.add_argument(
        "--keep-database", action="store_true", help="leave the bench database for inspection"
    )
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument("--profile", action="store_true", help="also profile a backfill of N/5 messages")
    parser.add_argument("--profile-out", help="write that profile's pstats to this file")
    parser.add_argument(
        "--corpus",
        type=Path,
        default=CORPUS.parent,
        help="the full corpus folder (mail-dev.tar.gz and more; default ../shared/corpus)",
    )
    parser.add_argument(
        "--import-folders",
        type=int,
        default=100,
        help="(d) also imports the N messages spread over this many Maildirs in one invocation (default 100)",
    )
    parser.add_argument(
        "--parse-ahead",
        choices=("auto", "always", "never"),
        help="the backfills' mailbox.sync.engine.PARSE_AHEAD (default: the product's, auto)",
    )
    parser.add_argument("--skip-import", action="store_true", help="skip (d), import_mail")
    parser.add_argument("--skip-notmuch", action="store_true", help="skip (c), notmuch new")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    CORPUS = args.corpus / "mail-dev.tar.gz"
    if args.child:
        child_main(json.loads(args.child))
        return
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.messages < 5:
        parser.error("--messages must be at least 5 (the second memory point is N/5)")

    # SIGTERM ends the run through the `finally` below: Dovecot stopped, database dropped.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    sys.path.insert(0, str(REPO))
    from tests.dovecot import POOL, running_dovecot

    messages = load_corpus(args.messages)
    small = [messages[i * len(messages) // (args.messages // 5)] for i in range(args.messages // 5)]
    megabytes = sum(wire_size(raw) for _, raw in messages) / MB
    print(
        f"{len(messages)} messages ({megabytes:.1f} MB as IMAP sends them) and {len(small)} for the "
        f"second memory point, from {CORPUS}"
    )

    setup_django(args.database)
    postgres_version = migrated_database(args.database)
    dovecot_root = Path(tempfile.mkdtemp(prefix="mf-bench-"))
    notmuch_root = Path(tempfile.mkdtemp(prefix="mf-bench-notmuch-"))
    import_root = Path(tempfile.mkdtemp(prefix="mf-bench-import-"))
    try:
        notmuch = None if args.skip_notmuch else prepare_notmuch(messages, notmuch_root)
        if not args.skip_import:
            write_maildir(import_root / "one", messages)
            write_tree(import_root / "tree", messages, max(1, args.import_folders))
        with running_dovecot(dovecot_root) as server:
            seed_user(server, LARGE_USER, messages)
            seed_user(server, SMALL_USER, small)
            warm_up(server, LARGE_USER, POOL[LARGE_USER], len(messages))
            warm_up(server, SMALL_USER, POOL[SMALL_USER], len(small))
            if args.server_side_binding:
                print("EXPERIMENT: backfills use psycopg server-side binding, not the product's setting")
            load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
            print(f"load average before measuring: {load} (other work on the machine skews every rate)")
            print(
                f"machine: {os.cpu_count()} cores ({cpu_model()}), Python {platform.python_version()}, "
                f"Dovecot {server.version}, PostgreSQL {postgres_version}, {notmuch_version()}"
            )

            def spec(account_id: str, user: str, expected: int, **extra: object) -> dict:
                return {
                    "database": args.database,
                    "account_id": account_id,
                    "host": server.host,
                    "port": server.imap_port,
                    "user": user,
                    "password": POOL[user],
                    "expected": expected,
                    "server_side_binding": args.server_side_binding,
                    **({"parse_ahead": args.parse_ahead} if args.parse_ahead else {}),
                    **extra,
                }

            small_run = run_backfill_child(spec("bench-small", SMALL_USER, len(small)))
            print(f"(b) N/5: {small_run['messages']} messages in {small_run['seconds']:.2f} s")
            rounds: list[tuple[Rate, Rate, Rate | None]] = []
            large_runs = []
            imports: list[tuple[int, str, dict, Rate]] = []
            for number in range(1, args.repeat + 1):
                anchor = run_anchor(server, LARGE_USER, POOL[LARGE_USER], ANCHOR_BATCH)
                print(f"round {number} (a): {anchor.messages} messages in {anchor.seconds:.2f} s")
                large_run = run_backfill_child(spec(f"bench-large-{number}", LARGE_USER, len(messages)))
                large_runs.append(large_run)
                backfill = Rate("(b) MailFathom: synchronize_account", **_rate_fields(large_run, megabytes))
                ahead, inline = large_run["batches_parsed_ahead"], large_run["batches_parsed_inline"]
                print(
                    f"round {number} (b): {backfill.messages} messages in {backfill.seconds:.2f} s "
                    f"({ahead} of {ahead + inline} batches parsed ahead)"
                )
                indexed = run_notmuch(notmuch, len(messages), megabytes) if notmuch else None
                if indexed is not None:
                    print(f"round {number} (c): {indexed.messages} messages in {indexed.seconds:.2f} s")
                rounds.append((anchor, backfill, indexed))
                if not args.skip_import:
                    for shape in ("one", "tree"):
                        imported, wall = run_import(
                            {
                                "database": args.database,
                                "account_id": f"bench-import-{shape}-{number}",
                                "import_path": str(import_root / shape),
                                "expected": len(messages),
                            }
                        )
                        imported["wall_seconds"] = wall
                        imports.append((number, shape, imported, backfill))
                        print(
                            f"round {number} (d) import_mail, {shape}: {imported['messages']} messages in "
                            f"{imported['seconds']:.2f} s ({wall:.2f} s with start-up)"
                        )
            profiled = None
            if args.profile:
                profiled = run_backfill_child(
                    spec("bench-profile", SMALL_USER, len(small), profile=True, profile_out=args.profile_out)
                )

        print_report(rounds, [small_run, large_runs[0]])
        print_imports(imports, args.import_folders)
        load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
        print(f"load average after measuring: {load}")
        if profiled is not None:
            print_profile(profiled["profile"], profiled["messages"])
        if args.json:
            report = {
                "messages": len(messages),
                "rounds": [[asdict(rate) if rate else None for rate in r] for r in rounds],
                "backfills": [small_run, *large_runs],
                "profile": profiled["profile"] if profiled else None,
                "imports": [{"round": n, "shape": shape, **run} for n, shape, run, _ in imports],
            }
            Path(args.json).write_text(json.dumps(report, indent=1))
    finally:
        if args.keep_database:
            print(f"kept the database {args.database} (--keep-database); drop it when done")
        else:
            drop_database(args.database)
        shutil.rmtree(dovecot_root, ignore_errors=True)
        shutil.rmtree(notmuch_root, ignore_errors=True)
        shutil.rmtree(import_root, ignore_errors=True)


def _rate_fields(run: dict, megabytes: float) -> dict:
    cpu = run["cpu_seconds"] + (run["postgres_cpu_seconds"] or 0.0)
    return {
        "messages": run["messages"],
        "seconds": run["seconds"],
        "megabytes": megabytes,
        "cpu_seconds": cpu,
    }


if __name__ == "__main__":
    main()
