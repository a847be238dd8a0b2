#!/usr/bin/env bash
# Backs up the database DATABASE_URL names: every schema (the service's tables and the pg-boss
# queue in `pgboss`), in pg_dump's custom format, from one consistent snapshot.
#
#   npm run backup [-- <file>]       default: backups/platform-<UTC time>.dump
#
# pg_dump must be of the server's major version or newer. The file is written as <file>.partial
# and renamed once pg_dump succeeded and the archive reads back, so a file with the final name
# is always a complete backup. It holds password hashes and sealed secrets: mode 0600.
# Exit status: 0 written, 2 refused (nothing written), 1 pg_dump failed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# npm runs scripts in the package folder; a relative path means where npm was called.
cd "${INIT_CWD:-$PWD}"
# shellcheck source=database-url.sh
source "$here/database-url.sh"

if [ -z "${DATABASE_URL:-}" ]; then
  echo "backup: DATABASE_URL is not set (embedded mode: stop the service and copy its data folder instead)" >&2
  exit 2
fi
# The password goes to pg_dump in PGPASSWORD, never on its command line (ps shows those to all).
split_database_url "$DATABASE_URL" backup || exit 2
case "${1:-}" in
  -h | --help)
    echo "usage: npm run backup [-- <file>]   (default: backups/platform-<UTC time>.dump)"
    exit 0
    ;;
  -*)
    echo "backup: unknown option '$1'; usage: npm run backup [-- <file>]" >&2
    exit 2
    ;;
esac
for tool in pg_dump pg_restore; do
  command -v "$tool" >/dev/null || {
    echo "backup: $tool is not installed (Debian: apt-get install postgresql-client)" >&2
    exit 2
  }
done

file="${1:-backups/platform-$(date -u +%Y%m%dT%H%M%SZ).dump}"
if [ -e "$file" ]; then
  echo "backup: $file already exists; name another file" >&2
  exit 2
fi
mkdir -p "$(dirname "$file")"
umask 077
partial="$file.partial"
trap 'rm -f "$partial"' EXIT

# No --no-owner / --no-privileges here: custom-format archives keep them, and restore.sh leaves
# them out (pg_restore), so the archive can still be restored with its owners by hand.
pg_dump --format=custom --file="$partial" --dbname="$DBNAME"
tables=$(pg_restore --list "$partial" | awk '$4 == "TABLE" && $5 != "DATA" && $5 != "ATTACH" { print $5 }')
mv "$partial" "$file"
trap - EXIT

schemas=$(sort -u <<<"$tables" | paste -sd, - | sed 's/,/, /g')
echo "backup: wrote $file ($(du -h "$file" | cut -f1), $(grep -c . <<<"$tables" || true) tables in schemas ${schemas:-none})"
