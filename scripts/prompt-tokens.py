#!/usr/bin/env python3
"""The main agent's prompt, in tokens, per tool: what every turn of `subagents run` costs before
any message (issue 42 item 4).

Runs `BIN run PROMPT --model openai-compatible:m@CAPTURE` (plus FLAGS) against a stand-in
OpenAI-compatible server on 127.0.0.1 that records the first chat request and answers "ok",
then counts that request's tokens with a real llama-server's chat template and tokenizer
(`/apply-template`, `/tokenize`; nothing is evaluated): the whole prompt, the prompt without
tools, and each tool's share (the prompt with every tool minus the prompt without that one).

    python3 scripts/prompt-tokens.py target/release/subagents [FLAGS...]
    LLAMA_URL=http://127.0.0.1:8080 WORKDIR=dir PROMPT='...' python3 scripts/prompt-tokens.py ...

The stand-in is a loopback server, so a run without --main-tools gets the lean default of a
local model; name the tools (`--main-tools all`, or a list) to count another set. WORKDIR
(default: the current directory) is where the command runs, with HOME set to it, so its
`.claude/agents` are the agents listed in the Task description.
"""
import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.request

LLAMA = os.environ.get("LLAMA_URL", "http://127.0.0.1:8080")
PROMPT = os.environ.get(
    "PROMPT", "Use the calculator agent to compute 17 * 23, then tell me the result."
)
captured = []


class Capture(http.server.BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def do_GET(self):
        self.send_response(404)
        self.end_headers()

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        if not self.path.endswith("/chat/completions"):
            self.send_response(404)
            self.end_headers()
            return
        req = json.loads(body)
        captured.append(req)
        chunk = {"id": "x", "object": "chat.completion.chunk", "model": req["model"],
                 "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"},
                              "finish_reason": None}]}
        if req.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            chunk["choices"][0] = {"index": 0, "delta": {}, "finish_reason": "stop"}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())
            return
        reply = json.dumps({"id": "x", "object": "chat.completion", "model": req["model"],
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": "ok"}}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                      "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


def post(path, body):
    req = urllib.request.Request(LLAMA + path, json.dumps(body).encode(),
                                 {"content-type": "application/json"})
    return json.load(urllib.request.urlopen(req))


def tokens(messages, tools):
    body = {"messages": messages}
    if tools:
        body["tools"] = tools
    prompt = post("/apply-template", body)["prompt"]
    return len(post("/tokenize", {"content": prompt})["tokens"])


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    workdir = os.environ.get("WORKDIR", os.getcwd())
    env = dict(os.environ, HOME=workdir)
    subprocess.run([sys.argv[1], "--store", "memory", "run", PROMPT,
                    "--model", f"openai-compatible:m@{base}", *sys.argv[2:]],
                   cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    server.shutdown()
    if not captured:
        sys.exit("the command sent no chat request")
    msgs, tools = captured[0]["messages"], captured[0].get("tools", [])
    total = tokens(msgs, tools)
    print(f"total {total} tokens ({len(tools)} tools)")
    print(f"  {'(no tools)':14} {tokens(msgs, []):5}")
    for t in tools:
        rest = [x for x in tools if x is not t]
        print(f"  {t['function']['name']:14} {total - tokens(msgs, rest):5}")


if __name__ == "__main__":
    main()
