"""`softeval convert-gguf` (rule convert_gguf): a GGUF checkpoint as a float32 Hugging Face folder."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from softeval.engine.gguf import convert_gguf, locate_gguf
from softeval.schema import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gguf", required=True, help='a .gguf file, or JSON {"path"} / {"package", "file"}')
    parser.add_argument("--root", default=".", help="folder a relative path is relative to")
    parser.add_argument("--out", required=True)


def gguf_spec(text: str) -> dict[str, str]:
    """--gguf: a file path, or a JSON object naming the file (softeval.engine.gguf.locate_gguf)."""
    try:
        return json.loads(text) if text.lstrip().startswith("{") else {"path": text}
    except ValueError as err:
        raise InputError(f"--gguf: neither a file path nor a JSON object ({err})") from None


def run(args: argparse.Namespace) -> None:
    spec = gguf_spec(args.gguf)
    record = convert_gguf(locate_gguf(spec, args.root), Path(args.out))
    print(f"{args.out}: float32 model from {record['gguf']} (sha256 {record['sha256'][:16]}...)")
