"""The demo's docs site for `npm run demo`: a site that is not Node, serving the static files of example-app/docs-site
(the same ones Caddy serves in the compose demo) on a loopback port, behind the Node front door's forward-auth.

The pages are Caddy templates; of them only `{{.Req.Header.Get "Name" | html}}` is used, so this handler renders just
that (the request header, HTML-escaped), as Caddy's `templates` does. It prints `docs listening on http://host:port`
once it listens, and exits when its standard input closes (the launcher ended, however it ended).

Usage: python3 docs_site.py ROOT [PORT]
"""

import html
import mimetypes
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

TEMPLATE = re.compile(r'\{\{\s*\.Req\.Header\.Get\s+"([A-Za-z0-9-]+)"\s*\|\s*html\s*\}\}')


class DocsHandler(BaseHTTPRequestHandler):
    root = "."
    server_version = "docs-site"
    sys_version = ""

    def file_for(self, target):
        path = unquote(urlsplit(target).path)
        if "\x00" in path or "\\" in path:
            return None
        full = os.path.realpath(os.path.join(self.root, path.lstrip("/")))
        if full != self.root and not full.startswith(self.root + os.sep):
            return None
        if os.path.isdir(full):
            if not path.endswith("/"):
                return ("redirect", path + "/")
            full = os.path.join(full, "index.html")
        return ("file", full) if os.path.isfile(full) else None

    def answer(self, body_wanted):
        found = self.file_for(self.path)
        if found is None:
            return self.send_text(404, "Not found\n", body_wanted)
        kind, where = found
        if kind == "redirect":
            self.send_response(308)
            self.send_header("Location", where)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        with open(where, "rb") as stream:
            body = stream.read()
        kind = mimetypes.guess_type(where)[0] or "application/octet-stream"
        if kind == "text/html":
            text = body.decode("utf-8")
            text = TEMPLATE.sub(lambda m: html.escape(self.headers.get(m.group(1), ""), quote=True), text)
            body = text.encode("utf-8")
            kind = "text/html; charset=utf-8"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if body_wanted:
            self.wfile.write(body)
        return None

    def send_text(self, status, text, body_wanted):
        body = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body_wanted:
            self.wfile.write(body)

    def do_GET(self):
        self.answer(True)

    def do_HEAD(self):
        self.answer(False)

    def log_message(self, format, *args):
        sys.stdout.write("%s %s\n" % (self.command, self.path))
        sys.stdout.flush()


def exit_when_parent_goes():
    # The launcher holds the other end of stdin: end of file means it is gone.
    sys.stdin.read()
    os._exit(0)


def main():
    DocsHandler.root = os.path.realpath(sys.argv[1])
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), DocsHandler)
    threading.Thread(target=exit_when_parent_goes, daemon=True).start()
    print("docs listening on http://127.0.0.1:%d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
