#!/usr/bin/env bash
# Restores a backup made by scripts/backup.sh into the database DATABASE_URL names.
#
#   npm run restore -- [--clean] <file>
#
# The target must have no tables, unless --clean: then what the backup holds is dropped first
# (pg_restore --clean --if-exists). Everything restored is owned by DATABASE_URL's role and no
# grants are restored (--no-owner --no-privileges), so a backup restores into another database
# or role. It all happens in one transaction and stops at the first error: a failed restore
# changes nothing. pg_restore must be of the backup's pg_dump version or newer.
# Exit status: 0 restored, 2 refused (nothing changed), 1 failed (nothing changed).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# npm runs scripts in the package folder; a relative path means where npm was called.
cd "${INIT_CWD:-$PWD}"
# shellcheck source=database-url.sh
source "$here/database-url.sh"

usage="usage: npm run restore -- [--clean] <file>"
if [ -z "${DATABASE_URL:-}" ]; then
  echo "restore: DATABASE_URL is not set: name the database to restore into" >&2
  exit 2
fi
# The password goes to psql and pg_restore in PGPASSWORD, never on their command lines (ps shows those to all).
split_database_url "$DATABASE_URL" restore || exit 2
clean=false
file=''
for arg in "$@"; do
  case "$arg" in
    --clean) clean=true ;;
    -h | --help)
      echo "$usage"
      exit 0
      ;;
    -*)
      echo "restore: unknown option '$arg'; $usage" >&2
      exit 2
      ;;
    *)
      if [ -n "$file" ]; then
        echo "restore: one file only; $usage" >&2
        exit 2
      fi
      file="$arg"
      ;;
  esac
done
if [ -z "$file" ]; then
  echo "restore: no backup file given; $usage" >&2
  exit 2
fi
for tool in pg_restore psql; do
  command -v "$tool" >/dev/null || {
    echo "restore: $tool is not installed (Debian: apt-get install postgresql-client)" >&2
    exit 2
  }
done
if [ ! -r "$file" ]; then
  echo "restore: cannot read $file" >&2
  exit 2
fi
if ! pg_restore --list "$file" >/dev/null 2>&1; then
  echo "restore: $file is not a pg_dump custom-format archive" >&2
  exit 2
fi

sql() { psql --dbname="$DBNAME" --no-psqlrc --quiet --tuples-only --no-align --set=ON_ERROR_STOP=1 --command="$1"; }
target=$(sql 'SELECT current_database()') || {
  echo "restore: cannot connect to the target database" >&2
  exit 1
}
tables=$(sql "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                AND n.nspname NOT LIKE 'pg\\_toast%'")
if [ "$tables" -gt 0 ] && [ "$clean" != true ]; then
  echo "restore: database '$target' already has $tables tables; restore into an empty database, or pass --clean to replace what the backup holds" >&2
  exit 2
fi

options=(--no-owner --no-privileges)
if [ "$tables" -eq 0 ]; then
  pg_restore "${options[@]}" --exit-on-error --single-transaction --dbname="$DBNAME" "$file" || failed=true
else
  # pg_restore --clean drops a partition's constraints before its table, which fails for the
  # partitions pg-boss and the history tables attach (their keys are then inherited). So the
  # drops and the restore go through psql in one transaction, after dropping the partitions the
  # backup holds (a detached one would keep copies of its keys that pg_restore does not know);
  # first go the foreign keys that refer to a partitioned table (a history table's parts to
  # it), which would refuse the drop of a partition they refer to. The restore makes them again.
  partitions=$(pg_restore --list "$file" | awk '$4 == "TABLE" && $5 == "ATTACH" { print $6 "." $7 }' |
    sed "s/'/''/g; s/.*/'&'/" | paste -sd, -)
  {
    cat <<SQL
DO \$\$
DECLARE statement text;
BEGIN
  FOR statement IN
    SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', k.conrelid::regclass, k.conname)
    FROM pg_constraint k JOIN pg_class r ON r.oid = k.confrelid
    WHERE k.contype = 'f' AND r.relkind = 'p' AND k.conparentid = 0
  LOOP
    EXECUTE statement;
  END LOOP;
  FOR statement IN
    SELECT format('DROP TABLE %s', i.inhrelid::regclass)
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relispartition AND n.nspname || '.' || c.relname = ANY (ARRAY[${partitions:-NULL}]::text[])
  LOOP
    EXECUTE statement;
  END LOOP;
END \$\$;
SQL
    pg_restore "${options[@]}" --clean --if-exists --file=- "$file"
  } | psql --dbname="$DBNAME" --no-psqlrc --quiet --set=ON_ERROR_STOP=1 --single-transaction --file=- >/dev/null || failed=true
fi
if [ "${failed:-false}" = true ]; then
  echo "restore: failed; database '$target' is unchanged" >&2
  exit 1
fi
# pg_restore brings no planner statistics: gather them before the service takes load.
sql 'ANALYZE' >/dev/null
echo "restore: restored $file into database '$target'"
