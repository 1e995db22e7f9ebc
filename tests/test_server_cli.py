"""`formwork serve` argument handling (in-process; no server is started)."""

from __future__ import annotations

import argparse

import pytest

from formwork.cli import build_parser, main
from formwork.server.serve_cmd import freeze_startup_heap, parse_size


@pytest.mark.parametrize("text, value", [("1024", 1024), ("512MiB", 512 << 20), ("2G", 2 << 30), ("64k", 64 << 10),
                                         ("1.5GiB", int(1.5 * (1 << 30))), (" 3 mb ", 3 << 20)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "lots", "12 parsecs", "-5", "0"])
def test_parse_size_rejects(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_size(text)


def test_serve_options_parse():
    args = build_parser().parse_args(["serve", "--model", "m", "--port", "9", "--served-model-name", "x",
                                      "--max-model-len", "128", "--max-num-seqs", "4", "--kv-cache-memory",
                                      "64MiB", "--api-key", "k"])
    assert (args.model, args.port, args.served_model_name, args.max_model_len, args.max_num_seqs) == \
        ("m", 9, "x", 128, 4)
    assert args.kv_cache_memory == 64 << 20 and args.api_key == "k" and args.host == "127.0.0.1"


def test_serve_help_and_bad_values(capsys):
    assert main(["serve", "--help"]) == 0
    assert "--served-model-name" in capsys.readouterr().out
    assert main(["serve", "--max-num-seqs", "0"]) == 2
    assert main(["serve", "--kv-cache-memory", "much"]) == 2


def test_serve_reports_a_missing_model(tmp_path, caplog):
    assert main(["serve", "--model", str(tmp_path / "nowhere")]) == 1
    assert "cannot load the model" in caplog.text and "nowhere" in caplog.text


def test_start_up_heap_is_frozen_out_of_the_cycle_collector():
    import gc

    alive = [[i] for i in range(1000)]  # tracked objects that outlive start-up
    try:
        frozen = freeze_startup_heap()
        # (not == frozen: another thread may free frozen objects meanwhile; these stay frozen)
        assert frozen >= len(alive) and gc.get_freeze_count() >= len(alive)
    finally:
        gc.unfreeze()
