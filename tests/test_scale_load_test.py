"""`python -m bench.load_test`: concurrent MCP sessions over streamable HTTP against the real server
process."""

from __future__ import annotations

import pytest

from bench import load_test


def test_concurrent_raw_clients_get_exactly_the_serial_sdk_results(capsys):
    """Raw streamable-HTTP clients, two paced rounds (a sweep): every result equals what the SDK
    client read serially, nothing fails, and each round reports latency, throughput and CPU per
    call."""
    code = load_test.main(
        ["--clients", "4", "--calls", "6", "--pool", "24", "--rounds", "1", "--rate", "40,80"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert (
        "| round 1 (40/s per client): calls / errors / results differing from serial | 24 / 0 / 0 |"
        in out
    )
    assert (
        "| round 2 (80/s per client): calls / errors / results differing from serial | 24 / 0 / 0 |"
        in out
    )
    assert "CPU per call, server / all clients (ms)" in out
    assert out.rstrip().endswith("errors_total: 0")


def test_a_bad_rate_is_a_usage_error():
    with pytest.raises(SystemExit) as exc:
        load_test.main(["--rate", "1,fast"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        load_test.main(["--rate", "0"])
    assert exc.value.code == 2
