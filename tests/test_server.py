"""``shapelint server``, driven by a scripted LSP client over the server's real stdio."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls", reason="shapelint[lsp] (pygls) is not installed")

GPT2 = '{\n  "n_embd": 768,\n  "n_head": 12,\n  "n_layer": 12,\n  "vocab_size": 50257\n}\n'
# A non-ASCII comment before the value: LSP columns count UTF-16 code units.
YAML = "# 🚀 model\nhidden_size: 768  # größe\nnum_attention_heads: 12\nnum_hidden_layers: 12\nvocab_size: 50257  # 🚀\n"
TIMEOUT = 60


class Client:
    """A minimal LSP client: Content-Length framed JSON-RPC over a subprocess's pipes."""

    def __init__(self, cwd: Path) -> None:
        env = dict(os.environ)
        env.pop("GITHUB_ACTIONS", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "shapelint", "server"],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        stream = self.proc.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            assert length is not None
            self.messages.put(json.loads(stream.read(length).decode("utf-8")))

    def send(self, method: str, params: Any, request: bool = False) -> int | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        ident = None
        if request:
            self.next_id += 1
            ident = message["id"] = self.next_id
        body = json.dumps(message).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return ident

    def raw(self, data: bytes) -> None:
        """Bytes as they are, framed or not."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def wait(self, match: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        while True:
            try:
                message = self.messages.get(timeout=timeout)
            except queue.Empty:
                assert self.proc.stderr is not None
                raise AssertionError("no answer from the server") from None
            if match(message):
                return message

    def request(self, method: str, params: Any) -> Any:
        ident = self.send(method, params, request=True)
        reply = self.wait(lambda m: m.get("id") == ident and "method" not in m)
        assert "error" not in reply, reply
        return reply["result"]

    def diagnostics(self, uri: str, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
        message = self.wait(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
            ),
            timeout,
        )
        diags: list[dict[str, Any]] = message["params"]["diagnostics"]
        return diags

    def close(self) -> int:
        self.request("shutdown", None)
        self.send("exit", None)
        return self.proc.wait(timeout=TIMEOUT)

    def release(self) -> None:
        """Stop the server if it still runs and close its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)
        self.reader.join(timeout=TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def client(tmp_path: Path) -> Any:
    c = Client(tmp_path)
    result = c.request(
        "initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}
    )
    assert result["serverInfo"]["name"] == "shapelint"
    assert result["capabilities"]["codeActionProvider"]
    c.send("initialized", {})
    yield c
    c.release()


def open_doc(client: Client, path: Path, text: str, language: str) -> str:
    uri = path.as_uri()
    client.send(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}},
    )
    return uri


def test_diagnostics_on_open_and_fix_as_code_action(client: Client, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("{}\n", encoding="utf-8")  # the editor's text is linted, not the disk's
    uri = open_doc(client, path, GPT2, "json")
    (diag,) = client.diagnostics(uri)
    assert diag["code"] == "SL101" and diag["source"] == "shapelint"
    assert diag["severity"] == 2  # warning
    assert diag["range"] == {
        "start": {"line": 4, "character": 16},
        "end": {"line": 4, "character": 21},
    }
    assert "% step time on H100-SXM]" in diag["message"]
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": diag["range"], "context": {"diagnostics": [diag]}},
    )
    (action,) = actions
    assert action["kind"] == "quickfix" and action["title"].startswith("SL101: ")
    (edit,) = action["edit"]["changes"][uri]
    assert edit == {"range": diag["range"], "newText": "50304"}
    assert client.close() == 0


def test_save_relints_and_columns_are_utf16(client: Client, tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(YAML, encoding="utf-8")
    uri = open_doc(client, path, YAML, "yaml")
    (diag,) = client.diagnostics(uri)
    assert diag["code"] == "SL101"
    assert diag["range"]["start"] == {"line": 4, "character": 12}
    # The fixed text arrives as a change; the save publishes again, now clean.
    fixed = YAML.replace("50257", "50304")
    client.send(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]},
    )
    assert client.diagnostics(uri) == []
    client.send("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []
    # A line with an astral character before the value: the UTF-16 column counts it twice.
    moved = "vocab_size: 50257\n".join(fixed.rsplit("vocab_size: 50304  # 🚀\n", 1))
    moved = moved.replace("num_hidden_layers: 12", "num_hidden_layers: 12\n🚀x: 1")
    client.send(
        "textDocument/didChange",
        {"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": moved}]},
    )
    (diag,) = client.diagnostics(uri)
    assert diag["range"]["start"]["line"] == 5
    assert client.close() == 0


def test_settings_apply_to_documents(client: Client, tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".shapelint.toml").write_text('[severity]\nSL101 = "error"\n', encoding="utf-8")
    uri = open_doc(client, tmp_path / "config.json", GPT2, "json")
    (diag,) = client.diagnostics(uri)
    assert diag["severity"] == 1  # error, from the settings
    uri = open_doc(client, tmp_path / "notes.txt", "vocab_size: 50257\n", "plaintext")
    assert client.diagnostics(uri) == []
    assert client.close() == 0


def test_astral_column_conversion() -> None:
    from shapelint.cli.server import utf16_column

    assert utf16_column("🚀x: 1", 3) == 3  # the rocket is two UTF-16 code units
    assert utf16_column("größe: 1", 8) == 7


# -- issue 26: what the client sends is bounded ----------------------------------------------


def frame(body: bytes, length: int | None = None) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


def did_open(path: Path, text: str) -> bytes:
    params = {"textDocument": {"uri": path.as_uri(), "languageId": "json", "version": 1}}
    params["textDocument"]["text"] = text  # type: ignore[index]
    message = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": params}
    return json.dumps(message).encode()


@pytest.mark.parametrize(
    "bad",
    [
        frame(b"{}", 10**15),  # failure 11: MemoryError
        frame(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}', 4000),  # desync
        frame(b"{}", int("9" * 400)),
        b"not a message\r\n\r\n",
    ],
    ids=["content-length-1e15", "content-length-past-the-body", "400-digits", "garbage"],
)
def test_a_bad_content_length_neither_ends_nor_desynchronises_the_server(
    client: Client, tmp_path: Path, bad: bytes
) -> None:
    """Issue 26, failure 11: ``Content-Length: 1000000000000000`` ended the server with
    MemoryError; a Content-Length larger than the body desynchronised it for good."""
    client.raw(bad)
    uri = (tmp_path / "config.json").as_uri()
    client.raw(frame(did_open(tmp_path / "config.json", GPT2)))
    (diag,) = client.diagnostics(uri, timeout=20)
    assert diag["code"] == "SL101"
    # And the next message too: the stream stays in step.
    second = tmp_path / "second.json"
    client.raw(frame(did_open(second, GPT2)))
    assert [d["code"] for d in client.diagnostics(second.as_uri(), timeout=20)] == ["SL101"]
    assert client.close() == 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_code_action_for_an_unopened_fifo_uri_does_not_block(
    client: Client, tmp_path: Path
) -> None:
    """Issue 26, failure 8: an LSP code action for an unopened FIFO URI blocked the server
    (pygls read the never-opened document from disk)."""
    os.mkfifo(tmp_path / "pipe.json")
    ident = client.send(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": (tmp_path / "pipe.json").as_uri()},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
            "context": {"diagnostics": []},
        },
        request=True,
    )
    reply = client.wait(lambda m: m.get("id") == ident and "method" not in m, timeout=20)
    assert reply.get("result") in ([], None), reply
    uri = open_doc(client, tmp_path / "config.json", GPT2, "json")
    assert [d["code"] for d in client.diagnostics(uri, timeout=20)] == ["SL101"]
    assert client.close() == 0


def test_a_document_over_the_cpu_budget_does_not_block_the_next(
    client: Client, tmp_path: Path
) -> None:
    """Failure 11 of issue 26: the server had no CPU budget, so a 1M-key YAML held the next
    document for 42 s. A document over `max-seconds-per-file` is SL000 on that document, as
    in `check`, and the next document is linted."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".shapelint.toml").write_text("max-seconds-per-file = 1\n", encoding="utf-8")
    big = "hidden_size: 768\nnum_attention_heads: 12\n" + "".join(
        f"k{i}: {i}\n" for i in range(300_000)
    )
    big_uri = open_doc(client, tmp_path / "big.yaml", big, "yaml")
    uri = open_doc(client, tmp_path / "config.json", GPT2, "json")
    (diag,) = client.diagnostics(big_uri)
    assert diag["code"] == "SL000" and "more than 1 s of CPU time" in diag["message"]
    assert [d["code"] for d in client.diagnostics(uri)] == ["SL101"]
    assert client.close() == 0
