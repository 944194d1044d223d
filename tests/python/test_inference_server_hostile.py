"""examples/cpp/inference_server under hostile clients and command lines: bodies nested to blow
the stack, oversized or unbounded bodies, bad flags, clients that trickle a byte a second or sit
idle (beside normal clients, and at the connection limit), and the listen backlog. The server is
built and the GPT saved as in test_cpp_api."""

import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from test_cpp_api import Server

pytestmark = [
    pytest.mark.multiprocess,
    pytest.mark.skipif(
        shutil.which("cmake") is None or shutil.which("ninja") is None,
        reason="needs cmake and ninja",
    ),
]


def post(server, route, data, timeout=60):
    """(status, JSON answer) of POSTing the bytes `data` as application/json."""
    req = urllib.request.Request(
        server.url + route,
        data=data,
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def health(server, timeout=10):
    with urllib.request.urlopen(server.url + "/v1/health", timeout=timeout) as r:
        return r.status


def address(server):
    host, port = server.url.split("//")[1].split(":")
    return host, int(port)


def exchange(server, data, timeout=10):
    """Everything the server sends back on one connection given `data`, until it closes it."""
    with socket.create_connection(address(server), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        try:
            while chunk := s.recv(65536):
                out += chunk
        except ConnectionResetError:  # closed with some of `data` unread: the answer came first
            pass
    return out


def split_answer(raw):
    """(status, JSON body) of one raw HTTP answer."""
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


@pytest.fixture(scope="module")
def binary(examples):
    return examples / "inference_server"


def test_a_body_nested_100000_deep_is_refused_and_the_server_lives_on(binary, gpt):
    server = Server(binary, gpt[1])
    try:
        deep = b'{"tokens": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        status, body = post(server, "/v1/logits", deep)
        assert status == 400 and "more than 32 deep" in body["error"], body
        # Brackets inside strings are not nesting; 33 levels are refused, 32 are parsed.
        assert post(server, "/v1/logits", b'{"tokens": [1], "x": "[[[[[[[[[[[[[[[[[[[["}')[0] == 200
        assert post(server, "/v1/logits", b"[" * 33 + b"]" * 33)[0] == 400
        status, body = post(server, "/v1/logits", b"[" * 32 + b"]" * 32)
        assert status == 400 and "tokens" in body["error"]
        assert health(server) == 200
    finally:
        server.stop()


def test_a_body_over_the_limit_is_answered_413_with_the_reason(binary, gpt):
    server = Server(binary, gpt[1], "--max-body-bytes", "4096")
    try:
        fits = json.dumps({"tokens": [1] * 1300}).encode()
        assert len(fits) <= 4096 and post(server, "/v1/logits", fits)[0] == 200
        status, body = post(server, "/v1/logits", json.dumps({"tokens": [1] * 2000}).encode())
        assert (status, body) == (413, {"error": "the body is over 4096 bytes"})
        # The body was read and dropped, not left unread: the next request on the connection is
        # answered.
        raw = exchange(
            server,
            b"POST /v1/logits HTTP/1.1\r\nContent-Length: 5000\r\n\r\n"
            + b" " * 5000
            + b"GET /v1/health HTTP/1.1\r\nConnection: close\r\n\r\n",
        )
        assert raw.startswith(b"HTTP/1.1 413") and b"HTTP/1.1 200 OK" in raw, raw
    finally:
        server.stop()
    server = Server(binary, gpt[1])  # the default limit: 1 MiB
    try:
        status, body = post(server, "/v1/logits", b"[" + b"1," * 600_000 + b"1]")
        assert (status, body) == (413, {"error": "the body is over 1048576 bytes"})
    finally:
        server.stop()


def test_unbounded_bodies_and_oversized_heads_are_refused_and_the_connection_closed(binary, gpt):
    server = Server(binary, gpt[1])
    try:
        head = b"POST /v1/logits HTTP/1.1\r\nHost: x\r\n"
        cases = {
            head + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n": 411,
            head + b"\r\n{}": 411,  # no Content-Length: httplib reads to the end of the stream
            head + b"Content-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}": 415,  # a zip bomb
            b"GET /v1/health HTTP/1.1\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n": 431,
        }
        for request, want in cases.items():
            status, body = split_answer(exchange(server, request))
            assert status == want and body["error"], (request[:80], body)
        assert health(server) == 200
    finally:
        server.stop()


def test_a_path_of_invalid_utf8_gets_404_and_the_server_lives_on(binary, gpt):
    """Found by tests/fuzz/fuzz_server_request: the 404's reason quoted the path, and dumping
    its invalid UTF-8 as JSON threw in a worker thread, which ended the server."""
    server = Server(binary, gpt[1])
    try:
        raw = b"POST /v1/gener\x9f\x88e HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        raw += b"Content-Length: 2\r\n\r\n{}"  # closed after the answer: no keep-alive wait
        status, body = split_answer(exchange(server, raw))
        assert status == 404 and "no route" in body["error"]
        assert health(server) == 200
    finally:
        server.stop()


def test_malformed_and_mistyped_bodies_get_400(binary, gpt):
    server = Server(binary, gpt[1])
    try:
        for route, data in [
            ("/v1/logits", b"{nope"),
            ("/v1/logits", b""),
            ("/v1/logits", b"[1, 2]"),
            ("/v1/logits", b'{"tokens": "abc"}'),
            ("/v1/logits", b'{"tokens": [1.5]}'),
            ("/v1/logits", b'{"tokens": [[1]]}'),
            ("/v1/logits", b'{"tokens": []}'),
            ("/v1/logits", b'{"tokens": [18446744073709551615]}'),
            ("/v1/generate", b'{"tokens": [1], "max_new_tokens": "4"}'),
            ("/v1/generate", b'{"tokens": [1], "max_new_tokens": 100000}'),
        ]:
            status, body = post(server, route, data)
            assert status == 400 and body["error"], (data, body)
        status, body = split_answer(
            exchange(server, b"GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n")
        )
        assert (status, body) == (404, {"error": "no route for GET /nope"})
    finally:
        server.stop()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--port", "abc"], "--port"),
        (["--port", "70000"], "--port"),
        (["--port", "-1"], "--port"),
        (["--threads", "0"], "--threads"),
        (["--max-batch", "0"], "--max-batch"),
        (["--read-timeout-ms", "0"], "--read-timeout-ms"),
        (["--port"], "--port"),
        (["--no-such-flag", "1"], "--no-such-flag"),
    ],
)
def test_a_bad_command_line_exits_2_with_a_message(binary, gpt, flags, message):
    done = subprocess.run([str(binary), gpt[1], *flags], capture_output=True, text=True, timeout=20)
    assert done.returncode == 2, done
    assert message in done.stderr and "--help" in done.stderr, done.stderr
    assert done.stdout == ""


def trickle(server, request, stop, cut_after):
    """Sends `request` a byte a second, reconnecting when cut off, until `stop`; appends (seconds
    from the first byte, what the server sent) for each connection the server answered or
    closed."""
    while not stop.is_set():
        with socket.create_connection(address(server), timeout=1.0) as s:
            t0 = time.monotonic()
            for byte in request:
                if stop.is_set():
                    return
                try:
                    s.send(bytes([byte]))
                    answer = s.recv(4096)  # within a second: an answer, or b"" at close
                except socket.timeout:
                    continue
                except OSError:  # reset
                    answer = b""
                cut_after.append((time.monotonic() - t0, answer))
                break


def idle(server, stop):
    """Connects and says nothing, again each time the server closes it, until `stop`."""
    while not stop.is_set():
        with socket.create_connection(address(server), timeout=1.0) as s:
            while not stop.is_set():
                try:
                    if not s.recv(1):
                        break  # closed by the server
                except socket.timeout:
                    continue
                except OSError:
                    break


def test_clients_trickling_a_byte_a_second_do_not_stop_service(binary, gpt):
    """20 clients send a request's head a byte a second, reconnecting when cut off, and 4 more
    connect and say nothing: each is cut off after the 1 s read deadline or the 0.5 s keep-alive
    time, so a normal request is still answered within a few seconds."""
    server = Server(binary, gpt[1], "--read-timeout-ms", "1000", "--keep-alive-timeout-ms", "500")
    stop = threading.Event()
    cut_after = []  # seconds from a trickling client's first byte to the server closing

    request = b"POST /v1/logits HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
    clients = [
        threading.Thread(target=trickle, args=(server, request, stop, cut_after)) for _ in range(20)
    ]
    clients += [threading.Thread(target=idle, args=(server, stop)) for _ in range(4)]
    try:
        for c in clients:
            c.start()
        time.sleep(2.0)  # every thread of the server has been taken more than once
        t0 = time.monotonic()
        status, body = post(server, "/v1/logits", b'{"tokens": [1, 2, 3]}', timeout=10)
        assert status == 200 and len(body["logits"]) == 23
        assert time.monotonic() - t0 < 5.0
    finally:
        stop.set()
        for c in clients:
            c.join()
        server.stop()
    # From the first byte: time queued for a thread, then at most the 1 s deadline.
    assert cut_after and all(s < 4.0 for s, _ in cut_after), cut_after
    assert any(a.startswith(b"HTTP/1.1 408") for _, a in cut_after), cut_after


def test_slow_and_silent_connections_do_not_starve_normal_clients(binary, gpt):
    """40 connections that send a head a byte a second or say nothing, each reconnecting when
    cut off, and 20 normal clients posting at once: every normal request is answered at once.
    With 16 fixed threads the slow connections held them all and the normal requests queued
    behind them for about 7 s (2 of 20 past their clients' timeouts in a report)."""
    server = Server(binary, gpt[1])  # the defaults: 16 threads, 2 s for a head, 512 connections
    stop = threading.Event()
    cut_after = []  # seconds from a trickling client's first byte to the server's answer

    request = b"POST /v1/logits HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    slow = [
        threading.Thread(target=trickle, args=(server, request, stop, cut_after)) for _ in range(20)
    ]
    slow += [threading.Thread(target=idle, args=(server, stop)) for _ in range(20)]
    answers = [None] * 20

    def normal(i):
        t0 = time.monotonic()
        try:
            status, body = post(server, "/v1/logits", b'{"tokens": [1, 2, 3]}', timeout=10)
            ok = status == 200 and len(body["logits"]) == 23
        except OSError as e:  # a timeout or a reset
            ok = repr(e)
        answers[i] = (ok, time.monotonic() - t0)

    try:
        for c in slow:
            c.start()
        time.sleep(3.0)  # every slow connection is held, and the first ones cut and back
        clients = [threading.Thread(target=normal, args=(i,)) for i in range(20)]
        for c in clients:
            c.start()
        for c in clients:
            c.join()
    finally:
        stop.set()
        for c in slow:
            c.join()
        server.stop()
    assert all(ok is True for ok, _ in answers), answers
    assert max(t for _, t in answers) < 2.0, answers
    # A head sent a byte a second is cut off by --header-timeout-ms (2 s), not --read-timeout-ms.
    late = [(s, a) for s, a in cut_after if a.startswith(b"HTTP/1.1 408")]
    assert late and all(1.5 < s < 3.5 for s, _ in late), cut_after
    assert all(b"request line and headers did not arrive within 2000 ms" in a for _, a in late)


def test_at_the_connection_limit_the_longest_waiting_gives_way_or_503(binary, gpt):
    """--max-connections 8 held by silent connections: a new client takes the place of the one
    that has waited longest, and is answered. Held by requests being answered (generations
    through one forward at a time), a new client is answered 503 at once."""
    server = Server(binary, gpt[1], "--max-connections", "8", "--threads", "1")
    try:
        silent = []
        for _ in range(8):
            silent.append(socket.create_connection(address(server), timeout=10))
            time.sleep(0.05)  # an order of arrival
        status, body = post(server, "/v1/logits", b'{"tokens": [1, 2, 3]}', timeout=10)
        assert status == 200 and len(body["logits"]) == 23
        assert silent[0].recv(1) == b""  # the first, cut off to make room
        silent[1].settimeout(0.2)
        with pytest.raises(socket.timeout):
            silent[1].recv(1)  # the others held still
        for s in silent:
            s.close()

        done = []  # when each generation was answered

        def generate():
            post(server, "/v1/generate", b'{"tokens": [1], "max_new_tokens": 1024}', timeout=60)
            done.append(time.monotonic())

        busy = [threading.Thread(target=generate) for _ in range(8)]
        for b in busy:
            b.start()
        time.sleep(0.1)  # all 8 read whole and generating
        refused = []
        while not done:
            t0 = time.monotonic()
            status, body = post(server, "/v1/logits", b'{"tokens": [1]}', timeout=10)
            if status == 503:
                refused.append((time.monotonic() - t0, body))
            time.sleep(0.01)
        for b in busy:
            b.join()
        assert refused, "no request came while all 8 connections were answering"
        assert all(t < 0.5 and "--max-connections" in b["error"] for t, b in refused), refused
        assert health(server) == 200
    finally:
        server.stop()


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss (iproute2)")
def test_the_listen_backlog_is_set_by_the_flag(binary, gpt):
    """httplib 0.11 listens with a backlog of 5: 64 clients connecting at once had SYNs dropped
    (a second's wait and retry, or a reset)."""
    server = Server(binary, gpt[1], "--backlog", "300")
    try:
        port = address(server)[1]
        out = subprocess.run(
            ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
        ).stdout.split()
        assert out[0] == "LISTEN" and out[2] == "300", out  # Send-Q of a listener: its backlog
    finally:
        server.stop()
