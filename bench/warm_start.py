"""Warm start: the first hybrid search of a freshly started web server, and the bare engine.

    .venv/bin/python bench/warm_start.py [--messages 200] [--rounds 3] [--engine-emails 300]
                                         [--busy 0] [--commands]

Imports `--messages` corpus messages (an even spread over ../shared/corpus/mail-dev.tar.gz)
into a scratch database (mailfathom_warm_bench, dropped afterwards) and embeds them with the
bundled default model. Then, in every round, both ways in turn:

- cold: a fresh web server (uvicorn on mailfathom.asgi, as `make run` starts it) with
  MAILFATHOM_EMBEDDING_WARM_START=false, which is how main behaved: the model is loaded by
  the first hybrid search (main also counted that load against the 10 s call deadline; here
  the search waits for it);
- warm: the same with warm start on (the default): the server loads the model as it starts
  and completes its startup once it has.

For each, the time from spawning the process until /health answers 200 (what `make run`
waits for before saying it is running), then the latency of the first search (a logged-in
person's /people/search/, hybrid), sent the moment /health answered, and of a second one.
The first search's latency cold against warm is the ratio printed.

The anchor of the engine figure: the bare engine (LocalEmbedder.embed, no resilience, no
database) on `--engine-emails` corpus emails' passages (subject and own words, the product's
window), in the model's batches, one thread, after loading; and the load alone (tokenizer
and weights) timed in a fresh interpreter. `--busy N` runs N spinning processes for the
whole run, so the machine is at least that loaded; `--commands` also runs `manage.py embed`
and `manage.py reembed --processes 2 --all` with the defaults in fresh processes and says
whether each embedded everything. The load average is printed throughout. No timing is
asserted anywhere.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from sync import drop_database, import_corpus, recreate_database, setup_django  # noqa: E402

DATABASE = "mailfathom_warm_bench"
QUERIES = ["when is the invoice due", "meeting next week about the budget"]


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def spin() -> None:
    while True:
        pass


def session_cookie() -> str:
    """A logged-in superuser's session cookie (created in the bench database's session store)."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    user = User.objects.create_superuser("warm-bench", "warm-bench@example.org", "unused-password-1")
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def settings_module(directory: Path) -> None:
    """A settings module: the product's, on the bench database (spawned processes import it)."""
    (directory / "warm_bench_settings.py").write_text(
        "from mailfathom.settings import *  # noqa: F403\n"
        f"DATABASES['default']['NAME'] = {DATABASE!r}  # noqa: F405\n"
        f"PROVIDER_HEALTH_NAMESPACE = {DATABASE!r}\n"
    )


def child_environment(directory: Path, warm: bool) -> dict[str, str]:
    environment = dict(os.environ)
    environment.update(
        DJANGO_SETTINGS_MODULE="warm_bench_settings",
        PYTHONPATH=os.pathsep.join([str(directory), str(REPO)]),
        OMP_NUM_THREADS="1",
        MAILFATHOM_EMBEDDING_WARM_START="true" if warm else "false",
    )
    return environment


def get(url: str, cookie: str | None = None, timeout: float = 120) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (our own server)
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""


def one_start(directory: Path, cookie: str, warm: bool) -> dict[str, float | str]:
    """Start a web server, wait for /health, then time two searches; stop it."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "uvicorn", "mailfathom.asgi:application", "--port", str(port)]
    started = time.perf_counter()
    server = subprocess.Popen(
        [*command, "--no-access-log"],
        env=child_environment(directory, warm),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        while True:
            if server.poll() is not None:
                raise SystemExit(f"the web server stopped: {server.stderr.read().decode()[-2000:]}")
            try:
                if get(f"{base}/health", timeout=2)[0] == 200:
                    break
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        ready = time.perf_counter() - started
        latencies, modes = [], []
        for query in QUERIES:
            sent = time.perf_counter()
            status, page = get(f"{base}/people/search/?q={urllib.request.quote(query)}", cookie)
            latencies.append(time.perf_counter() - sent)
            found = re.search(r"ranked (\w+)", page)
            modes.append(found.group(1) if status == 200 and found else f"HTTP {status}")
        return {
            "ready": ready,
            "first": latencies[0],
            "second": latencies[1],
            "until_first_answer": ready + latencies[0],
            "modes": "/".join(modes),
        }
    finally:
        server.terminate()
        server.wait(timeout=30)


def engine_figures(count: int) -> tuple[float, float, int]:
    """(load seconds in a fresh interpreter, bare engine emails/s on one thread, emails)."""
    from mailbox.models import Email
    from mailbox.services.embedding import BODY_READ_FACTOR, passage_text
    from mailfathom.providers.local import DEFAULT_MODEL, MODELS, LocalEmbedder

    probe = (
        "import time; started = time.perf_counter()\n"
        "from mailfathom.providers.local import _load, DEFAULT_MODEL\n"
        "_load(DEFAULT_MODEL)\n"
        "print(time.perf_counter() - started)\n"
    )
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    loaded = subprocess.run(
        [sys.executable, "-c", probe], env=environment, capture_output=True, text=True, check=True
    )
    load_seconds = float(loaded.stdout.strip().splitlines()[-1])
    window = 2000
    texts = [
        passage_text(subject, body[: window * BODY_READ_FACTOR])
        for subject, body in Email.objects.order_by("id").values_list("subject", "text_body")[:count]
    ]
    texts = [text for text in texts if text]
    engine = LocalEmbedder(DEFAULT_MODEL)
    engine.ensure_loaded()
    batch = MODELS[DEFAULT_MODEL].max_batch
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        engine.embed(texts[start : start + batch], query=False, timeout=None)
    return load_seconds, len(texts) / (time.perf_counter() - started), len(texts)


def run_command(directory: Path, arguments: list[str]) -> str:
    environment = child_environment(directory, warm=True)
    environment.pop("OMP_NUM_THREADS")  # the product's own default (one thread per engine)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "manage.py", *arguments, "--no-progress"],
        env=environment,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    said = (done.stdout.strip() or done.stderr.strip()[-300:]).replace("\n", " ")
    return f"exit {done.returncode} in {seconds:.1f} s: {said}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engine-emails", type=int, default=300)
    parser.add_argument("--busy", type=int, default=0, help="spinning processes kept running throughout")
    parser.add_argument("--commands", action="store_true", help="run embed and reembed with the defaults")
    args = parser.parse_args()

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for spinner in spinners:
        spinner.start()
    setup_django(DATABASE)
    recreate_database(DATABASE)
    from django.core.management import call_command

    from mailbox.services.embedding import embed_pending
    from mailbox.services.lexical_search import refresh_term_stats

    call_command("migrate", verbosity=0)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            directory = Path(scratch)
            settings_module(directory)
            import_corpus(max(args.messages, args.engine_emails), "Warm start bench")
            swept = embed_pending()
            refresh_term_stats()
            cookie = session_cookie()
            from django.db import connections

            connections.close_all()
            print(f"{swept.embedded} emails embedded; {args.busy} spinning processes; load {load()}")

            firsts: dict[str, list[float]] = {"cold": [], "warm": []}
            for round_number in range(1, args.rounds + 1):
                print(f"\nround {round_number}, load {load()}")
                for name, warm in (("cold", False), ("warm", True)):
                    row = one_start(directory, cookie, warm)
                    firsts[name].append(float(row["first"]))
                    print(
                        f"  {name}: /health after {row['ready']:.2f} s; first search {row['first']:.3f} s, "
                        f"second {row['second']:.3f} s ({row['modes']}); first answer "
                        f"{row['until_first_answer']:.2f} s after spawning"
                    )
            if args.rounds:  # --rounds 0: the engine figures (and --commands) only
                cold, warm = statistics.median(firsts["cold"]), statistics.median(firsts["warm"])
                print(
                    f"\nfirst hybrid search after start, median of {args.rounds}: cold {cold:.3f} s, "
                    f"warm {warm:.3f} s, cold/warm {cold / warm:.1f}x (load {load()})"
                )

            load_seconds, rate, emails = engine_figures(args.engine_emails)
            print(
                f"bare engine, one thread: {rate:.1f} emails/s over {emails} passages; "
                f"loading the model took {load_seconds:.2f} s in a fresh interpreter (load {load()})"
            )
            if args.commands:
                from mailbox.services.reembedding import restart_embedding

                pending = restart_embedding()  # every email pending again, for embed's fresh process
                connections.close_all()
                said = run_command(directory, ["embed"])
                print(f"manage.py embed, {pending} pending (load {load()}): {said}")
                reembed = ["reembed", "--all", "--processes", "2"]
                said = run_command(directory, reembed)
                print(f"manage.py reembed --all --processes 2 (load {load()}): {said}")
    finally:
        for spinner in spinners:
            spinner.terminate()
        drop_database(DATABASE)


if __name__ == "__main__":
    main()
