#!/usr/bin/env bash
# Validates deploy/Caddyfile (the compose proxy's configuration) with `caddy validate`, in each
# TLS_MODE, with sample values for the environment it reads; and checks it is `caddy fmt` clean.
# CI runs it. Needs caddy (Debian: apt-get install -y caddy) and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v caddy >/dev/null || { echo "check-caddyfile: caddy is not installed (apt-get install -y caddy)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# TLS_MODE=files loads the certificate while validating: a throwaway one.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
  -subj /CN=platform.example.com -addext subjectAltName=DNS:platform.example.com \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null

failures=0
for mode in acme files internal; do
  # Caddy's storage (the internal CA it creates) goes to the temporary folder.
  if env HOME="$tmp" XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config" \
    PUBLIC_HOST=platform.example.com TLS_MODE="$mode" API_UPSTREAMS="api-1:3000 api-2:3000" \
    TLS_CERT_FILE="$tmp/cert.pem" TLS_KEY_FILE="$tmp/key.pem" \
    caddy validate --config deploy/Caddyfile --adapter caddyfile >"$tmp/out" 2>&1; then
    echo "ok: deploy/Caddyfile is valid with TLS_MODE=$mode"
  else
    cat "$tmp/out" >&2
    echo "FAIL: deploy/Caddyfile is not valid with TLS_MODE=$mode" >&2
    failures=$((failures + 1))
  fi
done

if caddy fmt deploy/Caddyfile | diff -u deploy/Caddyfile - >&2; then
  echo "ok: deploy/Caddyfile is formatted (caddy fmt)"
else
  echo "FAIL: deploy/Caddyfile is not formatted: caddy fmt --overwrite deploy/Caddyfile" >&2
  failures=$((failures + 1))
fi

[ "$failures" -eq 0 ] || { echo "check-caddyfile: $failures problem(s)" >&2; exit 1; }
