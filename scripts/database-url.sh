# Sourced by backup.sh and restore.sh: keeps the database password off their command lines.
# `ps` shows every process's command line to every local user; a process's environment only
# to its own user and root. So the tools get DATABASE_URL without its password (--dbname) and
# the password in PGPASSWORD.
#
#   split_database_url "$DATABASE_URL" backup || exit 2
#
# sets DBNAME to the URL without the password (from `user:password@` and from a `password=`
# parameter, where libpq also reads one) and, when the URL holds one, exports PGPASSWORD with
# it percent-decoded as libpq decodes it. A URL without a password leaves PGPASSWORD (and
# ~/.pgpass) as they are. Answers 1, with a line on stderr starting with "$2: ", for what is
# not such a URL.

# Percent-decodes $1 into the variable named $2; answers 1 for a malformed escape or %00.
percent_decode() {
  local text="$1"
  if [[ "$text" =~ %([^0-9A-Fa-f]|.[^0-9A-Fa-f]|.?$) ]] || [[ "$text" =~ %00 ]]; then
    return 1
  fi
  # Backslashes doubled first, so that printf %b reads only the \xHH made of the escapes.
  text="${text//\\/\\\\}"
  printf -v "$2" '%b' "${text//%/\\x}"
}

split_database_url() {
  local url="$1" script="$2" scheme rest userinfo='' user='' password='' has_password=false
  if [[ ! "$url" =~ ^(postgres|postgresql):// ]]; then
    echo "$script: DATABASE_URL is not a postgres:// or postgresql:// URL" >&2
    return 1
  fi
  scheme="${url%%://*}://"
  rest="${url#*://}"
  # Credentials end at the first @ before any / (as libpq reads them); the user at the first :.
  local before_path="${rest%%/*}"
  if [[ "$before_path" == *@* ]]; then
    userinfo="${before_path%%@*}"
    rest="${rest#*@}"
    user="${userinfo%%:*}"
    if [[ "$userinfo" == *:* ]]; then
      password="${userinfo#*:}"
      has_password=true
    fi
  fi
  # A password= parameter: taken out; the other parameters stay as they are, in their order.
  local location="$rest" remaining='' kept='' parameter
  if [[ "$rest" == *\?* ]]; then
    location="${rest%%\?*}"
    remaining="${rest#*\?}"
  fi
  while [ -n "$remaining" ]; do
    parameter="${remaining%%&*}"
    if [[ "$remaining" == *'&'* ]]; then remaining="${remaining#*&}"; else remaining=''; fi
    if [[ "$parameter" == password=* ]]; then
      password="${parameter#password=}"
      has_password=true
    elif [ -n "$parameter" ]; then
      kept="${kept:+$kept&}$parameter"
    fi
  done
  if [ "$has_password" = true ]; then
    local decoded
    if ! percent_decode "$password" decoded; then
      echo "$script: DATABASE_URL has a malformed %-escape (or %00) in its password" >&2
      return 1
    fi
    export PGPASSWORD="$decoded"
  fi
  DBNAME="${scheme}${user:+$user@}${location}${kept:+?$kept}"
}
