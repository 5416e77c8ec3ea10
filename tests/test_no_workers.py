"""An address that is not a Dask scheduler ends the run with one line (``cluster.connect_timeout``)
instead of waiting forever."""

import http.server
import socket
import threading
import time

import pytest

from mccard_dist.cluster import connect
from mccard_dist.errors import ClusterError

pytestmark = pytest.mark.slow  # each test waits out a timeout of a few seconds


@pytest.fixture
def silent_port():
    """A TCP server that accepts connections and never sends a byte."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def accept():
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:  # closed at teardown
                return

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    for conn in accepted:
        conn.close()


@pytest.fixture
def http_port():
    """A plain HTTP server (what a dashboard port or a wrong service looks like)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("server", ["silent_port", "http_port"])
def test_an_address_that_is_not_a_scheduler_is_refused_within_connect_timeout(
        compose, request, server):
    from mccard_dist.config import from_dictconfig

    port = request.getfixturevalue(server)
    spec = from_dictconfig(compose(["experiment=smoke", "cluster=address",
                                    f"cluster.address=tcp://127.0.0.1:{port}",
                                    "cluster.connect_timeout=2s"])).cluster
    start = time.monotonic()
    with pytest.raises(ClusterError, match="cluster.connect_timeout") as info, connect(spec):
        pass
    assert time.monotonic() - start < 30  # 2 s asked; generous for a loaded machine
    message = str(info.value)
    assert message.startswith("cluster.address: ") and len(message.splitlines()) == 1
    assert f"127.0.0.1:{port}" in message

