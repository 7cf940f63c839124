"""A small OTLP/HTTP trace receiver for tests, built on the `opentelemetry-proto` package.

Listens on 127.0.0.1 (port 0: the OS picks one) and prints `PORT <n>` on stdout once ready.
  POST /v1/traces   an ExportTraceServiceRequest (application/x-protobuf, or gzip-encoded);
                    its spans are stored, the answer is an empty ExportTraceServiceResponse.
  GET  /spans       every span received so far, as a JSON array of
                    {trace_id, span_id, parent_span_id (hex, "" for a root), name, kind (int:
                    1 internal, 2 server, 3 client), service, scope, attributes {key: value}}.
Request headers are never stored.
"""

import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

SPANS = []
LOCK = threading.Lock()
MAX_BODY = 16 * 1024 * 1024


def any_value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attributes(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        length = int(self.headers.get("Content-Length", "0"))
        if length > MAX_BODY:
            self.send_error(413)
            return
        body = self.rfile.read(length)
        if self.headers.get("Content-Encoding", "") == "gzip":
            body = gzip.decompress(body)
        req = trace_service_pb2.ExportTraceServiceRequest()
        try:
            req.ParseFromString(body)
        except Exception:  # noqa: BLE001 - a bad body is a 400, not a crash
            self.send_error(400)
            return
        got = []
        for rs in req.resource_spans:
            res = attributes(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(
                        {
                            "trace_id": s.trace_id.hex(),
                            "span_id": s.span_id.hex(),
                            "parent_span_id": s.parent_span_id.hex(),
                            "name": s.name,
                            "kind": s.kind,
                            "service": res.get("service.name"),
                            "scope": ss.scope.name,
                            "attributes": attributes(s.attributes),
                        }
                    )
        with LOCK:
            SPANS.extend(got)
        out = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_GET(self):
        if self.path != "/spans":
            self.send_error(404)
            return
        with LOCK:
            out = json.dumps(SPANS).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
