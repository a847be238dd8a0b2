#!/usr/bin/env bash
# Validates docker-compose.yml and .env.example without a Docker engine (CI runs it):
#   1. .env.example with its required values filled in gives a valid configuration;
#   2. no settings at all, .env.example copied unchanged, and each required secret left
#      out in turn are refused, so nothing can start with a default secret;
#   3. every variable of src/config/environment.ts is listed in .env.example and in
#      docker-compose.yml;
#   4. only the proxy publishes ports, and it balances over every API replica.
# Needs `docker-compose` (Debian: apt-get install -y docker-compose) or `docker compose`.
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose)
elif docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
else
  echo "check-compose: neither docker-compose nor 'docker compose' is installed" >&2
  exit 2
fi

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The secrets that must never have a default, plus whatever else docker-compose.yml
# interpolates with ${VAR:?message}.
MUST_BE_REQUIRED=(POSTGRES_PASSWORD JWT_SECRET SECRETS_KEY)
mapfile -t required < <(
  {
    printf '%s\n' "${MUST_BE_REQUIRED[@]}"
    grep -oE '\$\{[A-Z0-9_]+:\?' docker-compose.yml | sed -E 's/^\$\{([A-Z0-9_]+):\?$/\1/'
  } | sort -u
)

# Run compose with only the given env file: a developer's .env and the caller's environment
# must not leak in.
unset_args=()
for var in "${required[@]}"; do unset_args+=(-u "$var"); done
run_compose() {
  env "${unset_args[@]}" "${compose[@]}" --env-file "$1" -f docker-compose.yml config -q
}

# 1. Filled in: must pass.
cp .env.example "$tmp/filled.env"
for var in "${required[@]}"; do
  if ! grep -qE "^${var}=" .env.example; then
    fail ".env.example does not list the required variable $var"
    continue
  fi
  value=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n') # 64 hex characters
  sed -i -E "s|^${var}=.*$|${var}=${value}|" "$tmp/filled.env"
done
if run_compose "$tmp/filled.env" >"$tmp/out" 2>&1; then
  echo "ok: .env.example with the required values filled in is valid"
else
  cat "$tmp/out" >&2
  fail "docker-compose.yml is not valid with a filled-in .env.example"
fi

# 2. Nothing set, .env.example unchanged, or one required secret missing: must be refused,
#    for a missing required variable (and not for some other error).
expect_refused() { # <env file> <label> <pattern the error must match>
  if run_compose "$1" >"$tmp/out" 2>&1; then
    fail "docker-compose.yml is accepted with $2 (does a required secret have a default?)"
  elif grep -qE "$3" "$tmp/out"; then
    echo "ok: refused with $2"
  else
    cat "$tmp/out" >&2
    fail "docker-compose.yml is refused with $2, but not for the missing required variable"
  fi
}
: >"$tmp/empty.env"
any_required=$(IFS='|'; echo "${required[*]}")
expect_refused "$tmp/empty.env" "no settings" "$any_required"
expect_refused .env.example ".env.example unchanged" "$any_required"
for var in "${required[@]}"; do
  grep -vE "^${var}=" "$tmp/filled.env" >"$tmp/without.env"
  expect_refused "$tmp/without.env" "$var missing" "$var"
done

# 3. Every variable the service reads is documented and passed through.
mapfile -t variables < <(grep -oE '^  [A-Z][A-Z0-9_]+[?!]?( =|:)' src/config/environment.ts | sed -E 's/^  ([A-Z0-9_]+).*/\1/' | sort -u)
if [ "${#variables[@]}" -eq 0 ]; then
  fail "found no variables in src/config/environment.ts"
fi
before=$failures
for var in "${variables[@]}"; do
  grep -qE "^#? ?${var}=" .env.example || fail ".env.example does not list $var (src/config/environment.ts reads it)"
  grep -qE "^ +${var}:" docker-compose.yml || fail "docker-compose.yml does not set $var (src/config/environment.ts reads it)"
done
if [ "$failures" -eq "$before" ]; then
  echo "ok: all ${#variables[@]} variables of src/config/environment.ts are in .env.example and docker-compose.yml"
fi

# 4. One entry point: no service but the proxy publishes a port (those of an optional profile,
#    started by hand, aside), and the proxy balances over every API replica (api-1, api-2, ...).
if env "${unset_args[@]}" "${compose[@]}" --env-file "$tmp/filled.env" -f docker-compose.yml config >"$tmp/config.yml" 2>"$tmp/out"; then
  published=$(awk '
    /^[^ ]/ { in_services = ($1 == "services:"); next }
    in_services && /^  [^ ]/ { name = substr($1, 1, length($1) - 1) }
    in_services && /^    ports:/ { ports[name] = 1 }
    in_services && /^    profiles:/ { optional[name] = 1 }
    END { for (name in ports) if (!(name in optional)) print name }' "$tmp/config.yml" | sort | xargs)
  if [ "$published" = "proxy" ]; then
    echo "ok: only the proxy publishes ports"
  else
    fail "only the proxy may publish ports; these do: ${published:-none}"
  fi
  replicas=$(grep -oE '^  api-[0-9]+:$' "$tmp/config.yml" | sed -E 's/^  (.*):$/\1:3000/' | sort | xargs)
  upstreams=$(sed -nE "s/^ +API_UPSTREAMS: *['\"]?([^'\"]*)['\"]?$/\1/p" "$tmp/config.yml" | xargs -n1 | sort | xargs)
  if [ -n "$replicas" ] && [ "$replicas" = "$upstreams" ]; then
    echo "ok: the proxy's API_UPSTREAMS are the API replicas ($replicas)"
  else
    fail "the proxy's API_UPSTREAMS ($upstreams) must list every API replica service ($replicas)"
  fi
else
  cat "$tmp/out" >&2
  fail "docker-compose config failed with a filled-in .env.example"
fi

if [ "$failures" -ne 0 ]; then
  echo "check-compose: $failures problem(s)" >&2
  exit 1
fi
