"""tests/tap/udp-echo.py, the UDP echo the multi-host test checks its
network namespaces with: a ping sent before the server has bound its
socket still gets its answer (the first datagram is lost, so the ping
repeats), and the server answers each address once it asks."""
import importlib.util
import os
import socket
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("udp_echo", os.path.join(HERE, "..", "..", "tap", "udp-echo.py"))
udp_echo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(udp_echo)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_ping_before_the_server_is_up_is_answered():
    port = free_port()
    result = {}

    def late_server():
        time.sleep(0.8)          # the ping's first datagrams find no socket
        result["served"] = udp_echo.serve("127.0.0.1", 1, port)

    t = threading.Thread(target=late_server)
    t.start()
    assert udp_echo.ping("127.0.0.1", port)
    t.join()
    assert result["served"]


def test_a_ping_with_no_server_fails_in_its_time():
    t0 = time.monotonic()
    assert not udp_echo.ping("127.0.0.1", free_port(), within=0.6)
    assert time.monotonic() - t0 < 2
