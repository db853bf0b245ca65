# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""test_listen.py - `hkvctl metrics --listen` serves scrapers at once: a
scrape is answered while slow clients (silent, or a byte at a time) hold
connections open; many scrapes in parallel all get the metrics; clients
beyond the bound get 503 at once; a slow client is dropped by the request
deadline (a byte at a time does not extend it); SIGTERM ends the server.

    HKV_BUILD=build /usr/bin/python3 tests/metrics/test_listen.py
"""
import re
import signal
import socket
import subprocess
import sys
import threading
import time

from test_metrics import (HKVCTL, Env, http_get, run_tests, start_workload, wait_for)

CLIENTS = 16            # http.c's HTTP_CLIENTS


def listen(e):
    ex = e.spawn([HKVCTL, "metrics", "--listen", "127.0.0.1:0", "--dir", e.rt],
                 stderr=subprocess.PIPE, text=True)
    m = re.search(r"listening on 127\.0\.0\.1:(\d+)", ex.stderr.readline())
    assert m, "no 'listening on' line"
    return ex, int(m.group(1))


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    return s


def still_open(s):
    """the server has not closed (nor answered) this connection yet"""
    s.setblocking(False)
    try:
        return s.recv(1) is None
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)


def scrape(port):
    st, _, body = http_get("http://127.0.0.1:%d/metrics" % port, timeout=30)
    return st, body


def test_scrape_past_slow_clients():
    e = Env()
    try:
        w, _, _, _ = start_workload(e)
        ex, port = listen(e)
        silent = [connect(port) for _ in range(3)]
        partial = connect(port)
        partial.sendall(b"GET /metrics HTTP/1.1\r\n")     # no blank line yet
        time.sleep(0.2)                                   # all of them accepted first
        st, body = scrape(port)
        assert st == 200 and "hugekv_allocations_total" in body, body[:300]
        # answered while the slow ones are still being waited for
        assert all(still_open(s) for s in silent + [partial])
        # the slow ones are dropped once the deadline passes: 400, closed
        for s in silent + [partial]:
            s.settimeout(30)
            data = b""
            while True:
                k = s.recv(4096)
                if not k:
                    break
                data += k
            assert data.startswith(b"HTTP/1.1 400"), data
            s.close()
        # many scrapers at once: every one gets the metrics
        got, errs = [], []

        def one():
            try:
                for _ in range(5):
                    got.append(scrape(port))
            except Exception as ex_:  # noqa: BLE001
                errs.append(ex_)
        ts = [threading.Thread(target=one) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errs, errs
        assert len(got) == 40 and all(st == 200 and body.endswith("\n") and
                                      "hugekv_pool_info" in body for st, body in got)
        w.send_signal(signal.SIGTERM)
        w.wait(timeout=20)
        ex.send_signal(signal.SIGTERM)
        assert ex.wait(timeout=30) == 0
    finally:
        e.close()


def test_bound_and_trickle():
    e = Env()
    try:
        ex, port = listen(e)
        held = [connect(port) for _ in range(CLIENTS)]
        time.sleep(0.3)
        extra = connect(port)                 # one more than the server serves
        extra.settimeout(30)
        assert extra.recv(4096).startswith(b"HTTP/1.1 503"), "503 beyond the bound"
        extra.close()
        for s in held:
            s.close()
        # the bound is free again: a scrape works
        wait_for("a scrape after the held ones", lambda: scrape(port)[0] == 200, 30, 0.2)
        # a byte every 0.3 s: dropped at the deadline, not kept alive by them
        s = connect(port)
        sent, req = 0, b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + b"X: " + b"a" * 200
        closed = False
        while sent < len(req):
            try:
                s.sendall(req[sent:sent + 1])
            except OSError:
                closed = True
                break
            sent += 1
            if not still_open(s):
                closed = True
                break
            time.sleep(0.3)
        assert closed, "a trickling client kept the connection open for %d bytes" % sent
        assert sent < len(req), sent
        s.close()
        ex.send_signal(signal.SIGTERM)
        assert ex.wait(timeout=30) == 0
    finally:
        e.close()


TESTS = [test_scrape_past_slow_clients, test_bound_and_trickle]

if __name__ == "__main__":
    sys.exit(run_tests(TESTS, "metrics --listen"))
