"""tot-mcp's log level holds for every library: bm25s sets its own logger to DEBUG, which used to
reach stderr at the default WARNING level (a 'DEBUG bm25s: Building index from tokens' line in a
client's server log)."""

from __future__ import annotations

import logging

from tot_mcp.server.cli import _configure_logging


def test_a_library_logger_set_to_debug_does_not_pass_the_configured_level(capsys):
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        _configure_logging("WARNING")
        chatty = logging.getLogger("bm25s")
        chatty.setLevel(logging.DEBUG)
        chatty.debug("Building index from tokens")
        chatty.warning("a real warning")
        err = capsys.readouterr().err
        assert "Building index" not in err and "a real warning" in err
    finally:
        root.handlers[:], root.level = saved
