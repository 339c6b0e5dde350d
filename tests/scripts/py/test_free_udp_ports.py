"""cluster.sh --ethernet's free UDP ports (dn2scripts.free_udp_ports)."""
from dn2scripts import free_udp_ports


def test_distinct_ports(capsys):
    free_udp_ports.main(["free_udp_ports", "4"])
    ports = [int(p) for p in capsys.readouterr().out.split()]
    assert len(ports) == 4 and len(set(ports)) == 4 and all(0 < p < 65536 for p in ports)
